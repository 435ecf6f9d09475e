//go:build !linux

package processor

import "syscall"

// waitExitedUnreaped is only available on Linux; elsewhere the group is
// signalled once the handler has been reaped (endLeftovers).
func waitExitedUnreaped(int) bool { return false }

// groupAlive reports whether group pgid has members; zombies count here.
func groupAlive(pgid int) bool { return signalGroup(pgid, 0) != syscall.ESRCH }
