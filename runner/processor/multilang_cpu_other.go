//go:build !linux

package processor

import "time"

// procCPU: elsewhere a running child's CPU time is not read; the handler
// CPU metric counts it once the child is reaped.
func procCPU(int) (time.Duration, bool) { return 0, false }
