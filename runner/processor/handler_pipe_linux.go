package processor

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

// writeNow writes what of b the pipe w takes at once, without waiting: one
// write(2) on the non-blocking descriptor. A pipe with room (growPipe's
// buffer holds a page's line whole) takes it all, and the caller's wait
// for the rest on another goroutine (a goroutine, a channel and the
// scheduler's wake-ups per message) is left out.
func writeNow(w *os.File, b []byte) int {
	raw, err := w.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	_ = raw.Write(func(fd uintptr) bool {
		for n < len(b) {
			m, err := syscall.Write(int(fd), b[n:])
			if err == syscall.EINTR {
				continue
			}
			if err != nil || m <= 0 {
				break
			}
			n += m
		}
		return true // never wait for room here
	})
	return n
}
