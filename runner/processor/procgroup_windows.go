//go:build windows

package processor

import (
	"os"
	"syscall"
)

// ownGroup starts a handler in a new process group: a console's Ctrl-C
// then reaches kcltool only, which lets running handlers finish, as on
// Unix.
func ownGroup() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// signalGroup: Windows has no signals to send to a group. Any signal but 0
// ends the handler process itself (TerminateProcess): there is no SIGTERM
// grace, and processes the handler started in the background are not
// ended with it (docs/handler.md). Sig 0 asks whether the process is still
// there; ESRCH when it is gone.
func signalGroup(pid int, sig syscall.Signal) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return syscall.ESRCH
	}
	defer p.Release()
	if sig == 0 {
		return nil
	}
	if err := p.Kill(); err != nil {
		return syscall.ESRCH
	}
	return nil
}
