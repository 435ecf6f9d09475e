// Command kcltool consumes Kinesis streams with the KCL lease protocol and
// operates KCL lease tables. See README.md and the manual in docs/.
package main

import (
	"os"

	"github.com/kcltool/kcltool/cmd"
)

func main() { os.Exit(run()) }

// run is main without the exit, so that the developers' CPU profile
// (profile.go) is written before the process ends.
func run() int {
	defer startCPUProfile()()
	defer tuneGC()()
	return cmd.Main()
}
