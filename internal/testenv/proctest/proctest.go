// Package proctest is process support shared by the tests of runner and
// its sub-packages: whether a process a test started is gone (Gone: no
// handler process may outlive its run) and how much CPU time this process
// and its children used (Rusage, for the benchmarks).
package proctest

import (
	"fmt"
	"os"
	"strings"
	"syscall"
)

// Gone reports whether pid has exited. A killed process whose parent died
// stays a zombie until init reaps it, which in a container may be never; a
// zombie is gone for our purposes.
func Gone(pid int) bool {
	if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return os.IsNotExist(err)
	}
	// pid (comm) state …: the state follows the last ')'.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}
