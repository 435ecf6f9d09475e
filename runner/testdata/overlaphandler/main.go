// Command overlaphandler is a test handler that records when it runs, so
// that a test can tell whether two handlers of one shard ever ran at once.
// It appends to $OVERLAP_LOG, with O_APPEND and one write per line:
//
//	start <worker> <shard> <pid> <monotonic ns>   as soon as it runs
//	alive <worker> <shard> <pid> <monotonic ns>   every 10ms
//	end   <worker> <shard> <pid> <monotonic ns>   on exit or SIGTERM
//
// A handler killed by SIGKILL writes no end line: its last alive line marks
// its end, within 10ms. It runs $OVERLAP_SLEEP (a Go duration) and exits 0.
// With OVERLAP_IGNORE_TERM=1 it ignores SIGTERM.
package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
	"unsafe"
)

func main() {
	f, err := os.OpenFile(os.Getenv("OVERLAP_LOG"), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	id := fmt.Sprintf("%s %s %d", os.Getenv("KCLTOOL_WORKER_ID"), os.Getenv("KCLTOOL_SHARD_ID"), os.Getpid())
	write := func(kind string) {
		_, _ = f.Write([]byte(fmt.Sprintf("%s %s %d\n", kind, id, monotonic())))
	}
	write("start")
	term := make(chan os.Signal, 1)
	if os.Getenv("OVERLAP_IGNORE_TERM") == "1" {
		signal.Ignore(syscall.SIGTERM)
	} else {
		signal.Notify(term, syscall.SIGTERM)
	}
	go func() { _, _ = io.Copy(io.Discard, os.Stdin) }()
	sleep, _ := time.ParseDuration(os.Getenv("OVERLAP_SLEEP"))
	done := time.After(sleep)
	tick := time.NewTicker(10 * time.Millisecond)
	for {
		select {
		case <-tick.C:
			write("alive")
		case <-term:
			write("end")
			os.Exit(143)
		case <-done:
			write("end")
			os.Exit(0)
		}
	}
}

// monotonic is CLOCK_MONOTONIC in nanoseconds: the same clock for every
// process on the machine, and one that never jumps.
func monotonic() int64 {
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		panic(errno)
	}
	return ts.Nano()
}
