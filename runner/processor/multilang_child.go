package processor

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/kcltool/kcltool/internal/clock"
)

// mlChild is one running MultiLang child: its stdin, its stdout as lines,
// its stderr logged line by line, in its own process group so that
// stopping it stops everything it started.
type mlChild struct {
	clock clock.Clock // times the grace its leftovers get (endLeftovers)
	cmd   *exec.Cmd
	stdin *os.File
	pgid  int
	// lines carries stdout's lines; it is closed at stdout's EOF, which is
	// how a child that exits is noticed.
	lines  chan []byte
	exited chan struct{} // closed once the child is reaped
	// waitErr is how the child ended, readable once exited is closed.
	waitErr error
	// mu guards stdin's close against a write in flight.
	mu     sync.Mutex
	closed bool
	// seenCPU is the most CPU time cpuSoFar has read, so that the figure
	// never goes back (a read that fails, a child being reaped).
	cpuMu   sync.Mutex
	seenCPU time.Duration
}

// mlLineMax bounds one stdout line: a processRecords status is short, and a
// child writing a line this long is broken.
const mlLineMax = 16 << 20

// startMLChild starts the child; reaped gets its CPU time (its rusage, with
// the processes it waited for) once it has exited and been reaped.
func startMLChild(clk clock.Clock, argv []string, dir string, env []string, log *slog.Logger, reaped func(cpu time.Duration)) (*mlChild, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = ownGroup()
	stderr := newStderrLogger(log)
	cmd.Stderr = stderr
	cmd.WaitDelay = pipeGrace
	stdinR, stdin, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		_ = stdinR.Close()
		_ = stdin.Close()
		return nil, err
	}
	growPipe(stdin)
	cmd.Stdin, cmd.Stdout = stdinR, stdoutW
	err = cmd.Start()
	_ = stdinR.Close() // the child has its copies
	_ = stdoutW.Close()
	if err != nil {
		_ = stdin.Close()
		_ = stdoutR.Close()
		return nil, fmt.Errorf("start the MultiLang child %q: %w", argv[0], err)
	}
	c := &mlChild{clock: clk, cmd: cmd, stdin: stdin, pgid: cmd.Process.Pid, lines: make(chan []byte, 16), exited: make(chan struct{})}
	go c.readLines(stdoutR)
	go func() {
		c.waitErr = cmd.Wait()
		// Wait has copied all of stderr: its last line, if it had no
		// newline, is logged now, before the child counts as exited.
		stderr.end()
		if ps := cmd.ProcessState; ps != nil && reaped != nil {
			reaped(ps.UserTime() + ps.SystemTime())
		}
		close(c.exited)
	}()
	return c, nil
}

// cpuSoFar is the running child's CPU time so far, with the processes it
// waited for, as the handler CPU metric counts it (where the system tells:
// procCPU).
func (c *mlChild) cpuSoFar() time.Duration {
	c.cpuMu.Lock()
	defer c.cpuMu.Unlock()
	if d, ok := procCPU(c.pgid); ok && d > c.seenCPU {
		c.seenCPU = d
	}
	return c.seenCPU
}

// readLines splits stdout into lines until EOF.
func (c *mlChild) readLines(r *os.File) {
	defer close(c.lines)
	defer r.Close()
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		var full []byte
		if errors.Is(err, bufio.ErrBufferFull) {
			// A long line (it should not happen: the child writes short
			// replies); gather it whole, within mlLineMax.
			full = append(full, line...)
			for errors.Is(err, bufio.ErrBufferFull) && len(full) < mlLineMax {
				line, err = br.ReadSlice('\n')
				full = append(full, line...)
			}
		} else {
			full = append([]byte(nil), line...)
		}
		if len(full) > 0 {
			c.lines <- full
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

// send writes one line to the child's stdin. It blocks while the child
// does not read; ctx or the child's exit ends the wait (the write itself
// then fails once the group is stopped).
func (c *mlChild) send(ctx context.Context, line []byte) error {
	// Usually the pipe has room for the whole line: written at once, on
	// this goroutine. A write still in flight (mu held) or a stdin being
	// closed leaves it all to the wait below. What a full pipe leaves of
	// the line is written below with mu still held, so that no other
	// line (a leaseLost after a cancelled wait) can come between its parts.
	locked := c.mu.TryLock()
	if locked && !c.closed {
		line = line[writeNow(c.stdin, line):]
		if len(line) == 0 {
			c.mu.Unlock()
			return nil
		}
	}
	done := make(chan error, 1)
	go func() {
		if !locked {
			c.mu.Lock()
		}
		defer c.mu.Unlock()
		if c.closed {
			done <- os.ErrClosed
			return
		}
		_, err := c.stdin.Write(line)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-c.exited:
		return fmt.Errorf("the child exited (%s)", c.exitStatus())
	}
}

// mlLines holds processRecords line buffers between lines, for every
// child of the process: a page's line is a few hundred kB, and a fresh one
// per page cost the consumer more than writing it (page faults on new
// memory; BenchmarkMultiLangLine/fresh). A buffer is back only while no
// line is in it, so the children share as many as they fill at once (a
// few, however many shards), and an idle worker's go with the next
// collections. Only sendBuffer puts one back: once every byte of its line
// was written.
var mlLines sync.Pool // of *[]byte

// mlLines keeps buffers from mlLineKeepMin to mlLineKeepMax bytes: a page
// of large records (up to 10 MB of data) is rare, and is better not kept
// for every page; a short line (a few records, an empty page) is cheap to
// allocate, and its buffer, handed to the next full page, would only be
// dropped for a new one.
const (
	mlLineKeepMin = 16 << 10
	mlLineKeepMax = 4 << 20
)

// mlLineBuffer is an empty buffer to write a line into: one that a line
// written whole left (sendBuffer), or nil.
func mlLineBuffer() []byte {
	if p, _ := mlLines.Get().(*[]byte); p != nil {
		return (*p)[:0]
	}
	return nil
}

// sendBuffer is send for a line written into mlLineBuffer's buffer: once
// every byte of it was written, the buffer goes back for the next line. A
// send that did not finish (cancelled, failed, the child gone) may have
// left the rest of the line to a write still in flight, which reads the
// buffer until it ends: that buffer is dropped, never reused.
func (c *mlChild) sendBuffer(ctx context.Context, line []byte) error {
	err := c.send(ctx, line)
	if err == nil && cap(line) >= mlLineKeepMin && cap(line) <= mlLineKeepMax {
		mlLines.Put(&line)
	}
	return err
}

// closeStdin tells the child to exit: the MLD closes stdin after the last
// message, and clients exit at EOF.
func (c *mlChild) closeStdin() {
	// A write blocked on a child that does not read holds mu: closing the
	// file (which Close does without the lock) unblocks it.
	_ = c.stdin.Close()
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
}

// stop closes stdin, lets the child exit until ctx ends, then kills its
// process group, and waits until it is reaped and its group is gone.
func (c *mlChild) stop(ctx context.Context) {
	c.closeStdin()
	select {
	case <-c.exited:
	case <-ctx.Done():
		_ = signalGroup(c.pgid, syscall.SIGKILL)
		<-c.exited
	}
	// What the child left behind in its group goes too.
	endLeftovers(c.clock, c.pgid, time.Time{})
}

// kill stops the child's process group at once.
func (c *mlChild) kill() {
	select {
	case <-c.exited:
	default:
		_ = signalGroup(c.pgid, syscall.SIGKILL)
	}
	c.closeStdin()
	<-c.exited
	endLeftovers(c.clock, c.pgid, time.Time{})
}

// exitStatus says how the child ended; call it once exited is closed.
func (c *mlChild) exitStatus() string {
	select {
	case <-c.exited:
	default:
		return "still running"
	}
	if _, err := exitStatus(c.waitErr); err != nil {
		return err.Error()
	}
	return "exit status 0"
}

// stderrLogger logs a child's stderr line by line, at info, with the
// shard (its logger's attributes). Its lines are stderrSplitter's: a cut
// one says how much was dropped, and end logs a last line without a
// newline once the child has exited.
type stderrLogger struct {
	// mu: exec's copying goroutine writes, the reaper ends.
	mu    sync.Mutex
	split stderrSplitter
}

func newStderrLogger(log *slog.Logger) *stderrLogger {
	s := &stderrLogger{}
	s.split.file = func(line string, _ int) { log.Info("child stderr", "line", line) }
	return s
}

func (s *stderrLogger) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.split.Write(p)
}

// end logs the last line if it had no newline; call it once the child's
// stderr is closed (cmd.Wait has returned).
func (s *stderrLogger) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.split.end()
}

var _ io.Writer = (*stderrLogger)(nil)
