package processor

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"unsafe"
)

// pPID is waitid's P_PID: wait for the one process named.
const pPID = 1

// waitExitedUnreaped blocks until the process pid has exited, without
// reaping it (waitid with WNOWAIT): as a zombie it keeps its process group
// id reserved, so the group can be signalled without any risk of reuse.
// os/exec reaps it afterwards as usual.
func waitExitedUnreaped(pid int) bool {
	var info [128]byte // siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if errno != syscall.EINTR {
			return errno == 0
		}
	}
}

// groupAlive reports whether a process of group pgid is still running.
// kill(-pgid, 0) cannot tell: it also succeeds for zombies, and orphans
// stay zombies for good where PID 1 does not reap them (kcltool itself as a
// container's entrypoint, for one). So /proc is read; this runs only when
// a handler left something behind.
func groupAlive(pgid int) bool {
	dir, err := os.Open("/proc")
	if err != nil {
		return syscall.Kill(-pgid, 0) != syscall.ESRCH
	}
	defer dir.Close()
	names, _ := dir.Readdirnames(-1)
	want := []byte(strconv.Itoa(pgid))
	for _, name := range names {
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		stat, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp …: comm may hold anything, so the
		// fields are counted from its last ')'.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(stat[i+1:])
		if len(f) >= 3 && bytes.Equal(f[2], want) && f[0][0] != 'Z' && f[0][0] != 'X' {
			return true
		}
	}
	return false
}
