package proctest

import (
	"bytes"
	"sync"
)

// Output is a process's stdout or stderr as a test keeps it: os/exec's
// goroutines write it while the test reads it.
type Output struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}
