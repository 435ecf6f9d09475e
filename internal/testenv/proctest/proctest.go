// Package proctest tells tests whether a process they started is gone:
// the handler tests of runner/processor and the worker tests of runner
// both check that no handler process outlives its run.
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
