//go:build !linux

package emulator

import "syscall"

// procAttr puts the server in its own process group so StopAll can signal it.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
