package emulator

import "syscall"

// procAttr puts the server in its own process group (so StopAll can signal
// the whole tree) and has the kernel kill it if the test binary dies first,
// so an interrupted `go test` never leaves servers behind.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
