package runner

import (
	"os"
	"syscall"
)

// fSetPipeSize is Linux's F_SETPIPE_SZ.
const fSetPipeSize = 1031

// growPipe asks for a pipe buffer of pipeBuffer bytes, so that a batch goes
// to the handler in a few writes instead of one per 64 KiB, each of which
// wakes the handler and then kcltool again. Failure (a lower
// /proc/sys/fs/pipe-max-size, say) only leaves the default size.
func growPipe(w *os.File) {
	if raw, err := w.SyscallConn(); err == nil {
		_ = raw.Control(func(fd uintptr) {
			_, _, _ = syscall.Syscall(syscall.SYS_FCNTL, fd, fSetPipeSize, pipeBuffer)
		})
	}
}
