package processor

import (
	"log/slog"
)

// Bounds on the handler's stderr lines logged per run. A handler that
// writes a line per record would otherwise put a whole batch into the log;
// the first lines say what it started doing and the last ones how it
// ended, so both ends are kept and the middle is counted.
const (
	// StderrLogLines is how many lines of one run are logged: the first
	// half and the last half when there are more.
	StderrLogLines = 100
	// StderrLogBytes bounds the bytes of those lines, half for each end.
	StderrLogBytes = 16 << 10
	// StderrLineMax is the longest line logged whole; the rest of a
	// longer line is counted as dropped.
	StderrLineMax = 2 << 10
)

// StderrLog is what is kept of a run's stderr for the log: its first and
// last lines, and how much between them was left out.
type StderrLog struct {
	Head, Tail   []string
	DroppedLines int64
	DroppedBytes int64
}

// stderrLines splits stderr into lines as it arrives and keeps the first
// and the last within the bounds. Like the other capture writers it never
// fails and never blocks, so the handler cannot stall on its stderr.
type stderrLines struct {
	log       StderrLog
	headBytes int
	tailBytes int
	tailed    bool // a line has gone to the tail: the head is closed
	split     stderrSplitter
}

func (s *stderrLines) Write(p []byte) (int, error) {
	if s.split.file == nil {
		s.split.file = s.keep
	}
	return s.split.Write(p)
}

// keep files one line (stderrSplitter), counting what was cut from it.
func (s *stderrLines) keep(line string, dropped int) {
	s.log.DroppedBytes += int64(dropped)
	const half, halfBytes = StderrLogLines / 2, StderrLogBytes / 2
	if !s.tailed && len(s.log.Head) < half && s.headBytes+len(line) <= halfBytes {
		s.log.Head = append(s.log.Head, line)
		s.headBytes += len(line)
		return
	}
	s.tailed = true
	s.log.Tail = append(s.log.Tail, line)
	s.tailBytes += len(line)
	for len(s.log.Tail) > half || s.tailBytes > halfBytes {
		s.log.DroppedLines++
		s.log.DroppedBytes += int64(len(s.log.Tail[0]))
		s.tailBytes -= len(s.log.Tail[0])
		s.log.Tail = s.log.Tail[1:]
	}
}

// result is what was kept, the last unended line included.
func (s *stderrLines) result() StderrLog {
	if s.split.file != nil {
		s.split.end()
	}
	return s.log
}

// Log writes the kept lines at info, one log line per stderr line, with
// attrs (the shard's batch: attempt and sequence range) on each, and a
// line saying how much was left out between the first and the last.
func (l StderrLog) Log(log *slog.Logger, attrs ...any) {
	with := func(extra ...any) []any {
		return append(append(make([]any, 0, len(attrs)+len(extra)), attrs...), extra...)
	}
	for _, line := range l.Head {
		log.Info("handler stderr", with("line", line)...)
	}
	if l.DroppedLines > 0 || l.DroppedBytes > 0 {
		log.Info("handler stderr lines dropped", with(
			"dropped_lines", l.DroppedLines, "dropped_bytes", l.DroppedBytes,
			"limit_lines", StderrLogLines, "limit_bytes", StderrLogBytes)...)
	}
	for _, line := range l.Tail {
		log.Info("handler stderr", with("line", line)...)
	}
}
