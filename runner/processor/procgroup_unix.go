//go:build !windows

package processor

import "syscall"

// ownGroup starts a handler in its own process group, so that a timeout
// ends everything the handler started, and so that Ctrl-C at a terminal
// reaches kcltool only, which then lets running handlers finish.
func ownGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// signalGroup sends sig to every process of group pgid (sig 0 only asks
// whether the group has members: ESRCH when it has none).
func signalGroup(pgid int, sig syscall.Signal) error { return syscall.Kill(-pgid, sig) }
