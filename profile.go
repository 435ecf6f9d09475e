package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
)

// startCPUProfile writes a CPU profile of the whole process to the file
// KCLTOOL_CPUPROFILE names, for developers (docs/development.md): the
// benchmarks run the built binary, where an in-process profile cannot
// reach. The returned function stops it; it is written when the command
// returns (a `run` stopped by SIGTERM or Ctrl-C included). A %p in the
// name becomes the process id, so that a benchmark's several runs keep
// one profile each.
func startCPUProfile() (stop func()) {
	path := os.Getenv("KCLTOOL_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(strings.ReplaceAll(path, "%p", strconv.Itoa(os.Getpid())))
	if err != nil {
		fmt.Fprintf(os.Stderr, "kcltool: KCLTOOL_CPUPROFILE: %v\n", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(os.Stderr, "kcltool: KCLTOOL_CPUPROFILE: %v\n", err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "kcltool: KCLTOOL_CPUPROFILE: %v\n", err)
		}
	}
}
