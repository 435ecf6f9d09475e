package runner

import (
	"bytes"
	"log/slog"
	"strconv"
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
	tailed    bool   // a line has gone to the tail: the head is closed
	partial   []byte // the line being written, at most StderrLineMax bytes
	cut       bool   // the line being written was longer than StderrLineMax
}

func (s *stderrLines) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if room := StderrLineMax - len(s.partial); room < len(chunk) {
			s.log.DroppedBytes += int64(len(chunk) - max(room, 0))
			chunk = chunk[:max(room, 0)]
			s.cut = true
		}
		s.partial = append(s.partial, chunk...)
		if i < 0 {
			break
		}
		s.endLine()
		p = p[i+1:]
	}
	return n, nil
}

// endLine files the line being written. Blank lines are not logged.
func (s *stderrLines) endLine() {
	raw := bytes.TrimRight(s.partial, "\r")
	if len(bytes.TrimSpace(raw)) == 0 {
		s.partial, s.cut = s.partial[:0], false
		return
	}
	line := string(raw)
	if s.cut {
		line += " [line cut at " + strconv.Itoa(StderrLineMax) + " bytes]"
	}
	s.partial, s.cut = s.partial[:0], false
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
	if len(s.partial) > 0 || s.cut {
		s.endLine()
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
