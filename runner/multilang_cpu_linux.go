package runner

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// procCPU reads a running process's user and system CPU time, and its
// reaped children's, from /proc/PID/stat (fields 14-17, in clock ticks of
// 1/100 s, USER_HZ on every Linux Go supports): what its rusage will say
// once it is reaped, to the tick.
func procCPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name (field 2) may hold spaces: count from after it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 > len(b) {
		return 0, false
	}
	fields := bytes.Fields(b[i+2:])
	if len(fields) < 15 {
		return 0, false
	}
	var ticks int64
	for _, f := range fields[11:15] { // utime stime cutime cstime
		n, err := strconv.ParseInt(string(f), 10, 64)
		if err != nil {
			return 0, false
		}
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / 100), true
}
