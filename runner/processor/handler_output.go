package processor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/kcltool/kcltool/kinesisrec"
)

// Bounds on what is kept of a handler's output. Everything beyond is read
// and discarded: a handler must never block on a full pipe.
const (
	// stdoutKeep is how much stdout is searched for the batchItemFailures
	// response: all of it up to this size, otherwise the last this-many
	// bytes (responses come last; a handler may echo a whole batch first).
	stdoutKeep = 1 << 20
	// outputLogMax bounds the stdout text handed to the logs per batch.
	outputLogMax = 4 << 10
	// StderrTailSize is how much of the end of stderr is kept for logs and
	// the failure file.
	StderrTailSize = 4 << 10
)

// responseMarker is the key that makes stdout JSON a partial-failure
// response. It is searched for as a byte string while stdout streams by, so
// that a response beyond the kept window is noticed rather than missed. The
// search ignores case: a response spelled "BatchItemFailures" must fail the
// batch, not pass for plain output and get the batch checkpointed.
var responseMarker = []byte(`"batchItemFailures"`)

// Keys of the response, which must be spelled exactly so.
const (
	keyBatchItemFailures = "batchItemFailures"
	keyItemIdentifier    = "itemIdentifier"
)

// countMarkers counts responseMarker in p in any case. Quotes are found
// with IndexByte, so text without them costs next to nothing.
func countMarkers(p []byte) int {
	n := 0
	for {
		i := bytes.IndexByte(p, '"')
		if i < 0 || len(p)-i < len(responseMarker) {
			return n
		}
		if bytes.EqualFold(p[i:i+len(responseMarker)], responseMarker) {
			n++
			p = p[i+len(responseMarker):]
			continue
		}
		p = p[i+1:]
	}
}

// stdoutCapture keeps the head of stdout for the logs and a window of it
// for the response, and counts response markers in the whole stream.
type stdoutCapture struct {
	head    []byte // first outputLogMax bytes
	window  []byte // all of stdout, or its last stdoutKeep bytes once over
	total   int64
	markers int    // occurrences of responseMarker in the whole stream
	carry   []byte // last len(responseMarker)-1 bytes, for markers split across writes
	scratch []byte
}

// Write never fails, so that os/exec keeps draining the pipe.
func (c *stdoutCapture) Write(p []byte) (int, error) {
	c.total += int64(len(p))
	if room := outputLogMax - len(c.head); room > 0 {
		c.head = append(c.head, p[:min(room, len(p))]...)
	}
	c.scratch = append(append(c.scratch[:0], c.carry...), p...)
	c.markers += countMarkers(c.scratch)
	keep := min(len(c.scratch), len(responseMarker)-1)
	c.carry = append(c.carry[:0], c.scratch[len(c.scratch)-keep:]...)
	c.window = append(c.window, p...)
	if len(c.window) > 2*stdoutKeep {
		// Shift rarely: only when the window has doubled.
		c.window = append(c.window[:0], c.window[len(c.window)-stdoutKeep:]...)
	}
	return len(p), nil
}

// overflowed reports whether the window no longer holds all of stdout.
func (c *stdoutCapture) overflowed() bool { return c.total > int64(len(c.window)) }

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max   int
	buf   []byte
	total int64
}

// Write never fails, so that a chatty stderr cannot block the handler.
func (t *tailBuffer) Write(p []byte) (int, error) {
	t.total += int64(len(p))
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return len(p), nil
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

// String is the kept tail, marked when bytes before it were dropped.
func (t *tailBuffer) String() string {
	b := t.buf
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	}
	if dropped := t.total - int64(len(b)); dropped > 0 {
		return "[" + strconv.FormatInt(dropped, 10) + " earlier bytes not kept]\n" + string(b)
	}
	return string(b)
}

// batchResponse is the Lambda-style partial-failure response.
type batchResponse struct {
	BatchItemFailures []batchItemFailure
}

type batchItemFailure struct {
	ItemIdentifier *string
}

// findResponse looks for a batchItemFailures object in out. The object may
// share stdout with other text and span several lines (jq pretty-prints);
// it must start a line. It returns the response (nil if there is none) and
// out without it, for the logs.
func findResponse(out []byte) (*batchResponse, []byte, error) {
	if countMarkers(out) == 0 {
		return nil, out, nil
	}
	var (
		resp *batchResponse
		text []byte
	)
	for pos := 0; pos < len(out); {
		lineEnd := bytes.IndexByte(out[pos:], '\n')
		if lineEnd < 0 {
			lineEnd = len(out)
		} else {
			lineEnd += pos + 1
		}
		if trimmed := bytes.TrimLeft(out[pos:lineEnd], " \t\r"); len(trimmed) > 0 && trimmed[0] == '{' {
			start := lineEnd - len(trimmed)
			dec := json.NewDecoder(bytes.NewReader(out[start:]))
			var obj map[string]json.RawMessage
			if dec.Decode(&obj) == nil {
				if key := misCased(obj, keyBatchItemFailures); key != "" {
					return nil, out, fmt.Errorf("handler response has the key %q; only %q, spelled exactly so, is read, so the whole batch fails rather than be taken as a success", key, keyBatchItemFailures)
				}
				if raw, ok := obj[keyBatchItemFailures]; ok {
					if resp != nil {
						return nil, out, errors.New("the handler printed more than one batchItemFailures response")
					}
					r, err := parseResponse(raw)
					if err != nil {
						return nil, out, err
					}
					resp = r
					pos = start + int(dec.InputOffset())
					// Drop the rest of the response's last line when blank,
					// so the text around it keeps its own lines.
					if rest := bytes.IndexByte(out[pos:], '\n'); rest >= 0 && len(bytes.TrimSpace(out[pos:pos+rest])) == 0 {
						pos += rest + 1
					}
					continue
				}
			}
		}
		text = append(text, out[pos:lineEnd]...)
		pos = lineEnd
	}
	return resp, text, nil
}

// parseResponse checks the batchItemFailures value strictly: Lambda treats
// a malformed response as a failure of the whole batch, and so do we. Keys
// are matched exactly (encoding/json would also take "ItemIdentifier").
func parseResponse(raw json.RawMessage) (*batchResponse, error) {
	var entries []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, fmt.Errorf("malformed batchItemFailures response: %v", err)
	}
	r := &batchResponse{BatchItemFailures: make([]batchItemFailure, len(entries))}
	for i, e := range entries {
		if key := misCased(e, keyItemIdentifier); key != "" {
			return nil, fmt.Errorf("malformed batchItemFailures response: entry %d has the key %q; only %q, spelled exactly so, is read", i, key, keyItemIdentifier)
		}
		v, ok := e[keyItemIdentifier]
		var id *string
		if ok {
			if err := json.Unmarshal(v, &id); err != nil {
				return nil, fmt.Errorf("malformed batchItemFailures response: entry %d: itemIdentifier: %v", i, err)
			}
		}
		if id == nil || *id == "" {
			return nil, fmt.Errorf("malformed batchItemFailures response: entry %d has no itemIdentifier", i)
		}
		r.BatchItemFailures[i].ItemIdentifier = id
	}
	return r, nil
}

// misCased returns a key of obj that is want in another case, or "".
func misCased(obj map[string]json.RawMessage, want string) string {
	for key := range obj {
		if key != want && strings.EqualFold(key, want) {
			return key
		}
	}
	return ""
}

// firstFailed maps the response to the index of the first failed record.
// itemIdentifier is a sequence number; the sub-records of a KPL aggregate
// share one, so the batch fails from the first record that has it.
func (r *batchResponse) firstFailed(records []kinesisrec.Record) (int, error) {
	if len(r.BatchItemFailures) == 0 {
		return len(records), nil
	}
	index := make(map[string]int, len(records))
	for i := len(records) - 1; i >= 0; i-- {
		index[records[i].SequenceNumber] = i
	}
	first := len(records)
	for _, f := range r.BatchItemFailures {
		i, ok := index[*f.ItemIdentifier]
		if !ok {
			return 0, fmt.Errorf("batchItemFailures names itemIdentifier %q, which is not a sequence number of this batch", *f.ItemIdentifier)
		}
		first = min(first, i)
	}
	return first, nil
}

// boundedText trims stdout text for the logs: at most outputLogMax bytes,
// with a note of how many more there were (dropped counts bytes already
// left out by the caller).
func boundedText(text []byte, dropped int64) string {
	if len(text) > outputLogMax {
		dropped += int64(len(text) - outputLogMax)
		text = text[:outputLogMax]
	}
	text = bytes.TrimSpace(text)
	if dropped > 0 {
		return string(text) + "\n[" + strconv.FormatInt(dropped, 10) + " more bytes not kept]"
	}
	return string(text)
}
