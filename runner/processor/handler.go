package processor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/kcltool/kcltool/internal/clock"
	"github.com/kcltool/kcltool/kinesisrec"
)

// Batch is one handler invocation: records of one shard, in order, and the
// context the handler learns from its environment.
type Batch struct {
	App, Stream, ShardID, WorkerID string
	MillisBehindLatest             int64
	// Attempt is how many times these records have been handed to a
	// handler, this time included (KCLTOOL_ATTEMPT). Policy.Process sets
	// it for each run, counting on from the value it is given, if any.
	Attempt int
	Records []kinesisrec.Record
}

// Outcome classifies a handler run.
type Outcome int

const (
	// Succeeded: exit 0 and no failed items; checkpoint the whole batch.
	Succeeded Outcome = iota
	// PartiallyFailed: exit 0 with a batchItemFailures response;
	// Result.FailedFrom records succeeded.
	PartiallyFailed
	// Failed: non-zero exit, a signal, a timeout, a malformed response, or
	// the handler could not be started.
	Failed
)

func (o Outcome) String() string {
	switch o {
	case Succeeded:
		return "succeeded"
	case PartiallyFailed:
		return "partially failed"
	}
	return "failed"
}

// Result is what one handler run did.
type Result struct {
	Outcome Outcome
	// FailedFrom is the index of the first failed record when the outcome
	// is PartiallyFailed; records before it may be checkpointed.
	FailedFrom int
	// ExitCode is the handler's exit status, -1 when it was killed by a
	// signal or never started.
	ExitCode int
	// TimedOut is set when Handler.Timeout killed the process group.
	TimedOut bool
	// Err says why the batch did not fully succeed; nil on success.
	Err error
	// CPU is the user and system CPU time of the handler process and of
	// the processes it waited for (a shell's commands), when it ran.
	CPU time.Duration
	// StderrTail is the end of the handler's stderr (StderrTailSize bytes),
	// for the failure file.
	StderrTail string
	// Stderr is the handler's stderr as lines for the log, bounded
	// (StderrLogLines, StderrLogBytes).
	Stderr StderrLog
	// Output is the handler's stdout other than the response, bounded,
	// for the logs.
	Output   string
	Duration time.Duration
}

// ErrNoHandlerEnv: a Handler was built without the environment its
// processes inherit (Handler.Env).
var ErrNoHandlerEnv = errors.New("no handler environment: Handler.Env must be set by the caller")

// pipeGrace is how long Run keeps reading stdout and stderr after the
// handler has exited. A background process the handler left behind may
// hold them open forever; it must not hold the shard too.
const pipeGrace = time.Second

// Handler runs one process per batch and classifies how it ended.
type Handler struct {
	// Argv is the program and its arguments, run directly (`-- cmd args…`).
	// ShellCommand builds it for --exec.
	Argv   []string
	Format Format
	// Timeout bounds one run; when it passes, the handler's whole process
	// group is killed. Zero means no limit.
	Timeout time.Duration
	// Env is the environment the handler inherits, given by the caller
	// (cmd passes its own); the KCLTOOL_* variables are added to it. It
	// must be set: runner never reads the environment itself, and a nil
	// Env fails every run (ErrNoHandlerEnv) rather than start a handler
	// without PATH. An empty, non-nil slice gives only KCLTOOL_*.
	Env []string
	// Dir is the working directory; empty means this process's.
	Dir string
	// Clock times the timeout and the run; nil means the real clock.
	Clock clock.Clock

	// The program is looked up in PATH once, not for every batch.
	lookOnce sync.Once
	program  string
}

// ShellCommand is the argv for --exec: the script runs through sh -c, so
// that arguments, pipes and redirections work as typed.
func ShellCommand(script string) []string {
	return []string{"sh", "-c", script}
}

type killReason int

const (
	notKilled killReason = iota
	killedTimeout
	killedCancel
)

// Run runs the handler on b and waits for it. Cancelling ctx kills the
// handler's process group at once; to let a running handler finish, keep
// ctx alive (Policy.Process has a separate soft stop). Its steps: command
// (build it), startHandler, feedStdin, watch (kill on timeout or cancel), wait,
// then classify the exit (exitStatus, classifyStdout).
func (h *Handler) Run(ctx context.Context, b Batch) Result {
	clk := h.Clock
	if clk == nil {
		clk = clock.RealClock()
	}
	started := clk.Now()
	res := Result{Outcome: Failed, ExitCode: -1}
	if len(h.Argv) == 0 {
		res.Err = errors.New("no handler command")
		return res
	}
	if h.Env == nil {
		res.Err = ErrNoHandlerEnv
		return res
	}
	if err := context.Cause(ctx); err != nil {
		res.Err = fmt.Errorf("not started: %w", err)
		return res
	}
	cmd, out := h.command(b)
	stdin, err := startHandler(cmd)
	if err != nil {
		res.Err = err
		return res
	}
	g := &procGroup{pgid: cmd.Process.Pid, done: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		feedStdin(stdin, h.Format, b.Records)
	}()
	go func() {
		defer wg.Done()
		g.watch(ctx, clk, h.Timeout)
	}()
	termSent, waitErr := g.wait(clk, cmd, stdin)
	wg.Wait()
	endLeftovers(clk, g.pgid, termSent)

	res.StderrTail = out.stderr.String()
	res.Stderr = out.stderrLog.result()
	res.Duration = clk.Now().Sub(started)
	if ps := cmd.ProcessState; ps != nil {
		res.CPU = ps.UserTime() + ps.SystemTime()
	}
	switch g.killed {
	case killedTimeout:
		res.TimedOut = true
		res.Err = fmt.Errorf("handler timed out after %s; its process group was killed", h.Timeout)
		res.Output = boundedText(out.stdout.head, out.stdout.total-int64(len(out.stdout.head)))
		return res
	case killedCancel:
		res.Err = fmt.Errorf("handler stopped: %w", context.Cause(ctx))
		res.Output = boundedText(out.stdout.head, out.stdout.total-int64(len(out.stdout.head)))
		return res
	}
	res.ExitCode, res.Err = exitStatus(waitErr)
	classifyStdout(&res, out.stdout, b.Records)
	return res
}

// handlerOutput collects a handler's stdout and stderr.
type handlerOutput struct {
	stdout    *stdoutCapture
	stderr    *tailBuffer
	stderrLog *stderrLines
}

// command builds the handler's command for b: the program, found in PATH
// once, with the batch's KCLTOOL_* variables, in its own process group.
func (h *Handler) command(b Batch) (*exec.Cmd, handlerOutput) {
	h.lookOnce.Do(func() {
		h.program = h.Argv[0]
		if p, err := exec.LookPath(h.program); err == nil && filepath.Base(h.program) == h.program {
			h.program = p
		}
	})
	// A program not found stays a bare name: Start then reports it, for
	// every batch, as before.
	cmd := exec.Command(h.program, h.Argv[1:]...)
	cmd.Args[0] = h.Argv[0]
	cmd.Dir = h.Dir
	base := h.Env
	// Appended last so that they win over KCLTOOL_* variables the parent
	// environment may hold (kcltool reads its own flags from those): for
	// duplicate keys os/exec passes only the last.
	cmd.Env = append(append(make([]string, 0, len(base)+9), base...), batchEnv(b)...)
	// Its own process group, so that a timeout kills everything the handler
	// started, and so that Ctrl-C at a terminal reaches kcltool only, which
	// then lets running handlers finish.
	cmd.SysProcAttr = ownGroup()
	out := handlerOutput{stdout: &stdoutCapture{}, stderr: &tailBuffer{max: StderrTailSize}, stderrLog: &stderrLines{}}
	// os/exec drains both into these writers on its own goroutines, which
	// never block, so the handler cannot stall on a full stderr pipe.
	cmd.Stdout, cmd.Stderr = out.stdout, io.MultiWriter(out.stderr, out.stderrLog)
	cmd.WaitDelay = pipeGrace
	return cmd, out
}

// startHandler starts cmd with a stdin pipe and returns the pipe's
// writing end.
func startHandler(cmd *exec.Cmd) (*os.File, error) {
	// The stdin pipe is made here rather than by cmd.StdinPipe, to size it.
	stdinR, stdin, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("handler stdin: %w", err)
	}
	growPipe(stdin)
	cmd.Stdin = stdinR
	err = cmd.Start()
	_ = stdinR.Close() // the handler has its copy
	if err != nil {
		_ = stdin.Close()
		return nil, fmt.Errorf("start handler: %w", err)
	}
	return stdin, nil
}

// feedStdin writes the batch to the handler and closes its stdin. A
// handler may exit without reading its input (it may not need it); the
// write then fails with EPIPE, and only its exit status counts.
func feedStdin(stdin *os.File, f Format, records []kinesisrec.Record) {
	_ = WriteBatch(stdin, f, records)
	_ = stdin.Close()
}

// procGroup is a running handler's process group: watch kills it, wait
// reaps the handler; exited (under mu) keeps a kill from reaching a group
// id that may have been reused.
type procGroup struct {
	pgid   int
	done   chan struct{} // closed once the handler is reaped
	mu     sync.Mutex
	exited bool
	killed killReason // readable once done is closed and watch returned
}

// watch kills the group when timeout passes or ctx is cancelled, and
// returns once the handler is reaped or killed.
func (g *procGroup) watch(ctx context.Context, clk clock.Clock, timeout time.Duration) {
	var timedOut <-chan time.Time
	if timeout > 0 {
		t := clk.NewTimer(timeout)
		defer t.Stop()
		timedOut = t.C()
	}
	why := notKilled
	select {
	case <-g.done:
		return
	case <-ctx.Done():
		why = killedCancel
	case <-timedOut:
		why = killedTimeout
	}
	// A stop that allows a grace (the lease deadline, termGrace) sends
	// SIGTERM first and SIGKILL only if the handler outlives the grace.
	grace := termGrace(ctx, why == killedCancel)
	signal := syscall.SIGKILL
	if grace > 0 {
		signal = syscall.SIGTERM
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	// Once Wait has reaped the handler its group may be empty and its
	// id reused; never signal it then.
	if !g.exited {
		g.killed = why
		_ = signalGroup(g.pgid, signal)
	}
	if signal == syscall.SIGKILL || g.exited {
		return
	}
	g.mu.Unlock()
	t := clk.NewTimer(grace)
	select {
	case <-g.done:
	case <-t.C():
	}
	t.Stop()
	g.mu.Lock()
	if !g.exited {
		_ = signalGroup(g.pgid, syscall.SIGKILL)
	}
}

// wait reaps the handler, having told what it left in its group to stop
// (at termSent; zero if not).
func (g *procGroup) wait(clk clock.Clock, cmd *exec.Cmd, stdin *os.File) (time.Time, error) {
	// The handler's exit ends its batch. What it left in its group is told
	// to stop now, while the handler, not yet reaped, still holds the
	// group's id: their hold on stdout and stderr then ends too, and Wait
	// need not sit out pipeGrace.
	var termSent time.Time
	if waitExitedUnreaped(g.pgid) {
		termSent = clk.Now()
		_ = signalGroup(g.pgid, syscall.SIGTERM)
	}
	waitErr := cmd.Wait()
	// A process the handler left behind may hold stdin open without
	// reading: closing our end ends a write still blocked on it.
	_ = stdin.Close()
	g.mu.Lock()
	g.exited = true
	g.mu.Unlock()
	close(g.done)
	return termSent, waitErr
}

// exitStatus classifies how a handler that was not killed by kcltool
// ended: its exit code (-1 after a signal) and why that is a failure (nil
// for exit 0).
func exitStatus(waitErr error) (int, error) {
	var exitErr *exec.ExitError
	switch {
	case waitErr == nil || errors.Is(waitErr, exec.ErrWaitDelay):
		return 0, nil
	case errors.As(waitErr, &exitErr):
		code := exitErr.ExitCode()
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return code, fmt.Errorf("handler killed by signal %v", ws.Signal())
		}
		return code, fmt.Errorf("handler exited with status %d", code)
	default:
		return -1, fmt.Errorf("handler: %w", waitErr)
	}
}

// classifyStdout reads the partial-failure response of a handler that
// exited 0 and fills Output. A handler that failed is not asked which items
// failed: the whole batch failed, as with Lambda.
func classifyStdout(res *Result, out *stdoutCapture, records []kinesisrec.Record) {
	window := out.window
	overflowed := out.overflowed()
	if overflowed {
		window = window[len(window)-stdoutKeep:]
		// The window may start mid-line; a response must start a line.
		if i := bytes.IndexByte(window, '\n'); i >= 0 {
			window = window[i+1:]
		} else {
			window = nil
		}
	}
	resp, text, err := findResponse(window)
	if overflowed {
		res.Output = boundedText(out.head, out.total-int64(len(out.head)))
	} else {
		res.Output = boundedText(text, 0)
	}
	if res.Err != nil {
		return
	}
	switch {
	case err != nil:
		res.Err = err
	case overflowed && out.markers != countMarkers(window):
		res.Err = fmt.Errorf("handler wrote %d bytes to stdout and its batchItemFailures response was not within the last %d; write logs to stderr", out.total, stdoutKeep)
	case out.markers > 0 && resp == nil:
		// Better to retry than to checkpoint past items the handler may have
		// meant to report: a truncated or garbled response is a failure.
		res.Err = errors.New("handler stdout mentions batchItemFailures but holds no readable response (it must be a JSON object starting a line)")
	case resp == nil:
		res.Outcome = Succeeded
		return
	default:
		first, err := resp.firstFailed(records)
		if err != nil {
			res.Err = err
			return
		}
		if first == len(records) {
			res.Outcome = Succeeded
			return
		}
		res.Outcome, res.FailedFrom = PartiallyFailed, first
		res.Err = fmt.Errorf("handler reported %d failed items; the first is record %d of %d (sequence number %s)",
			len(resp.BatchItemFailures), first+1, len(records), records[first].SequenceNumber)
	}
}
