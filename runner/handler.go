package runner

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

	"github.com/kcltool/kcltool/kinesisrec"
	"github.com/kcltool/kcltool/leasecore"
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
	// Env is the environment the KCLTOOL_* variables are added to; nil
	// means this process's environment.
	Env []string
	// Dir is the working directory; empty means this process's.
	Dir string
	// Clock times the timeout and the run; nil means the real clock.
	Clock leasecore.Clock

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
// ctx alive (Policy.Process has a separate soft stop).
func (h *Handler) Run(ctx context.Context, b Batch) Result {
	clock := h.Clock
	if clock == nil {
		clock = leasecore.RealClock()
	}
	started := clock.Now()
	res := Result{Outcome: Failed, ExitCode: -1}
	if len(h.Argv) == 0 {
		res.Err = errors.New("no handler command")
		return res
	}
	if err := context.Cause(ctx); err != nil {
		res.Err = fmt.Errorf("not started: %w", err)
		return res
	}

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
	if base == nil {
		base = os.Environ()
	}
	// Appended last so that they win over KCLTOOL_* variables the parent
	// environment may hold (kcltool reads its own flags from those): for
	// duplicate keys os/exec passes only the last.
	cmd.Env = append(append(make([]string, 0, len(base)+9), base...), batchEnv(b)...)
	// Its own process group, so that a timeout kills everything the handler
	// started, and so that Ctrl-C at a terminal reaches kcltool only, which
	// then lets running handlers finish.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout := &stdoutCapture{}
	stderr := &tailBuffer{max: StderrTailSize}
	stderrLog := &stderrLines{}
	// os/exec drains both into these writers on its own goroutines, which
	// never block, so the handler cannot stall on a full stderr pipe.
	cmd.Stdout, cmd.Stderr = stdout, io.MultiWriter(stderr, stderrLog)
	cmd.WaitDelay = pipeGrace
	// The stdin pipe is made here rather than by cmd.StdinPipe, to size it.
	stdinR, stdin, err := os.Pipe()
	if err != nil {
		res.Err = fmt.Errorf("handler stdin: %w", err)
		return res
	}
	growPipe(stdin)
	cmd.Stdin = stdinR
	err = cmd.Start()
	_ = stdinR.Close() // the handler has its copy
	if err != nil {
		_ = stdin.Close()
		res.Err = fmt.Errorf("start handler: %w", err)
		return res
	}
	pgid := cmd.Process.Pid

	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		// A handler may exit without reading its input (it may not need
		// it); the write then fails with EPIPE, and only its exit status
		// counts.
		_ = writeBatch(stdin, h.Format, b.Records)
		_ = stdin.Close()
	}()
	var (
		mu     sync.Mutex
		exited bool
		killed killReason
	)
	done := make(chan struct{})
	go func() {
		defer wg.Done()
		var timeout <-chan time.Time
		if h.Timeout > 0 {
			t := clock.NewTimer(h.Timeout)
			defer t.Stop()
			timeout = t.C()
		}
		why := notKilled
		select {
		case <-done:
			return
		case <-ctx.Done():
			why = killedCancel
		case <-timeout:
			why = killedTimeout
		}
		// A stop that allows a grace (the lease deadline, termGrace) sends
		// SIGTERM first and SIGKILL only if the handler outlives the grace.
		grace := termGrace(ctx, why == killedCancel)
		signal := syscall.SIGKILL
		if grace > 0 {
			signal = syscall.SIGTERM
		}
		mu.Lock()
		defer mu.Unlock()
		// Once Wait has reaped the handler its group may be empty and its
		// id reused; never signal it then.
		if !exited {
			killed = why
			_ = syscall.Kill(-pgid, signal)
		}
		if signal == syscall.SIGKILL || exited {
			return
		}
		mu.Unlock()
		t := clock.NewTimer(grace)
		select {
		case <-done:
		case <-t.C():
		}
		t.Stop()
		mu.Lock()
		if !exited {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}()
	// The handler's exit ends its batch. What it left in its group is told
	// to stop now, while the handler, not yet reaped, still holds the
	// group's id: their hold on stdout and stderr then ends too, and Wait
	// need not sit out pipeGrace.
	var termSent time.Time
	if waitExitedUnreaped(pgid) {
		termSent = time.Now()
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
	}
	waitErr := cmd.Wait()
	// A process the handler left behind may hold stdin open without
	// reading: closing our end ends a write still blocked on it.
	_ = stdin.Close()
	mu.Lock()
	exited = true
	mu.Unlock()
	close(done)
	wg.Wait()
	endLeftovers(pgid, termSent)

	res.StderrTail = stderr.String()
	res.Stderr = stderrLog.result()
	res.Duration = clock.Now().Sub(started)
	if ps := cmd.ProcessState; ps != nil {
		res.CPU = ps.UserTime() + ps.SystemTime()
	}
	switch killed {
	case killedTimeout:
		res.TimedOut = true
		res.Err = fmt.Errorf("handler timed out after %s; its process group was killed", h.Timeout)
		res.Output = boundedText(stdout.head, stdout.total-int64(len(stdout.head)))
		return res
	case killedCancel:
		res.Err = fmt.Errorf("handler stopped: %w", context.Cause(ctx))
		res.Output = boundedText(stdout.head, stdout.total-int64(len(stdout.head)))
		return res
	}
	var exitErr *exec.ExitError
	switch {
	case waitErr == nil || errors.Is(waitErr, exec.ErrWaitDelay):
		res.ExitCode = 0
	case errors.As(waitErr, &exitErr):
		res.ExitCode = exitErr.ExitCode()
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Err = fmt.Errorf("handler killed by signal %v", ws.Signal())
		} else {
			res.Err = fmt.Errorf("handler exited with status %d", res.ExitCode)
		}
	default:
		res.Err = fmt.Errorf("handler: %w", waitErr)
	}
	classifyStdout(&res, stdout, b.Records)
	return res
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
