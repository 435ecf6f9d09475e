//go:build windows

package metrics

import (
	"syscall"
	"time"
)

// processCPU is this process's user and system CPU time (GetProcessTimes;
// the times are in 100 ns units).
func processCPU() (time.Duration, bool) {
	var created, exited, kernel, user syscall.Filetime
	h, err := syscall.GetCurrentProcess()
	if err != nil {
		return 0, false
	}
	if err := syscall.GetProcessTimes(h, &created, &exited, &kernel, &user); err != nil {
		return 0, false
	}
	ticks := func(f syscall.Filetime) int64 { return int64(f.HighDateTime)<<32 | int64(f.LowDateTime) }
	return time.Duration((ticks(kernel) + ticks(user)) * 100), true
}
