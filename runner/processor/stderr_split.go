package processor

import (
	"bytes"
	"strconv"
)

// stderrSplitter cuts a child's stderr into lines as it arrives, for both
// protocols (--exec's per-run stderrLines, MultiLang's stderrLogger). A
// line keeps at most StderrLineMax bytes, so that a child writing without
// newlines cannot grow it without bound: a longer one is filed cut, marked
// with how many bytes were dropped. A last line without a newline is filed
// by end, once the child's stderr is closed: the KCL's sample processors
// write their log lines without one, and the MLD logs what its reader has
// when the stream ends. Blank lines and a trailing \r are not kept.
type stderrSplitter struct {
	// file gets each line and how many bytes were cut from it.
	file    func(line string, dropped int)
	partial []byte // the line being written, at most StderrLineMax bytes
	dropped int    // bytes of the line being written past StderrLineMax
}

func (s *stderrSplitter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if room := max(StderrLineMax-len(s.partial), 0); room < len(chunk) {
			s.dropped += len(chunk) - room
			chunk = chunk[:room]
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

// end files the last line when it has no newline.
func (s *stderrSplitter) end() {
	if len(s.partial) > 0 || s.dropped > 0 {
		s.endLine()
	}
}

func (s *stderrSplitter) endLine() {
	raw, dropped := bytes.TrimRight(s.partial, "\r"), s.dropped
	s.dropped = 0
	if len(bytes.TrimSpace(raw)) == 0 && dropped == 0 {
		s.partial = s.partial[:0]
		return
	}
	line := string(raw)
	s.partial = s.partial[:0]
	if dropped > 0 {
		line += cutMarker(dropped)
	}
	s.file(line, dropped)
}

// cutMarker ends a line cut at StderrLineMax.
func cutMarker(dropped int) string {
	return " [line cut at " + strconv.Itoa(StderrLineMax) + " bytes, " + strconv.Itoa(dropped) + " more dropped]"
}
