package processor

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// procCPU reads a running process's CPU time so far, with its reaped
// children's: what its rusage will say once it is reaped. /proc/PID/stat
// counts in clock ticks of 10 ms, too coarse for a child that spends a few
// milliseconds a second, so its threads' time on a CPU comes from their
// schedstat, in nanoseconds; the larger of the two counts (schedstat
// misses threads that have exited, stat rounds down).
func procCPU(pid int) (time.Duration, bool) {
	dir := "/proc/" + strconv.Itoa(pid)
	self, children, ok := procStatTicks(dir + "/stat")
	if !ok {
		return 0, false
	}
	tasks, err := os.ReadDir(dir + "/task")
	if err != nil {
		return self + children, true
	}
	var run time.Duration
	for _, task := range tasks {
		b, err := os.ReadFile(dir + "/task/" + task.Name() + "/schedstat")
		if err != nil {
			continue // the thread exited meanwhile
		}
		f := bytes.Fields(b)
		if len(f) == 0 {
			continue
		}
		if ns, err := strconv.ParseInt(string(f[0]), 10, 64); err == nil {
			run += time.Duration(ns)
		}
	}
	return max(self, run) + children, true
}

// procStatTicks reads utime+stime and cutime+cstime (fields 14-17) of
// /proc/PID/stat, in clock ticks of 1/100 s (USER_HZ on every Linux Go
// supports).
func procStatTicks(path string) (self, children time.Duration, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, false
	}
	// The command name (field 2) may hold spaces: count from after it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 > len(b) {
		return 0, 0, false
	}
	fields := bytes.Fields(b[i+2:])
	if len(fields) < 15 {
		return 0, 0, false
	}
	var ticks [4]int64
	for j, f := range fields[11:15] {
		n, err := strconv.ParseInt(string(f), 10, 64)
		if err != nil {
			return 0, 0, false
		}
		ticks[j] = n
	}
	const tick = time.Second / 100
	return time.Duration(ticks[0]+ticks[1]) * tick, time.Duration(ticks[2]+ticks[3]) * tick, true
}
