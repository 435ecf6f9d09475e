// Package jsonscan is the small part of a JSON parser that kcltool's fast
// answer decoders need (GetRecords pages in runner, Scan pages in
// leasecore). The SDK's schema-driven decoders allocate for every field of
// every record or item; these decoders read an answer in one pass into the
// SDK's own output types. Any error from a Scanner means only "not a shape
// this decoder handles": the caller then hands the same bytes to the SDK, so
// the result is the SDK's either way.
package jsonscan

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strconv"
	"unsafe"
)

// ErrUnhandled is returned for malformed JSON and for anything the fast
// decoders leave to the SDK.
var ErrUnhandled = errors.New("json answer: left to the SDK's decoder")

// Scanner reads one JSON document. Every method skips leading white space.
type Scanner struct {
	b    []byte
	text string // b as a string
	i    int
}

// New scans body. Strings without escapes are returned as substrings of
// one string sharing body's bytes, so body must not change afterwards:
// callers pass a buffer read for this answer alone.
func New(body []byte) *Scanner {
	return &Scanner{b: body, text: unsafe.String(unsafe.SliceData(body), len(body))}
}

// Rest is the unread part of the document.
func (s *Scanner) Rest() []byte { return s.b[s.i:] }

// End reports whether only white space is left.
func (s *Scanner) End() bool {
	s.ws()
	return s.i == len(s.b)
}

func (s *Scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// Peek returns the next byte that is not white space, or 0 at the end.
func (s *Scanner) Peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// Null consumes a null if one comes next.
func (s *Scanner) Null() bool {
	if s.Peek() == 'n' && bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return true
	}
	return false
}

// Object calls member for each key, positioned at its value. Keys that
// hold escapes are left to the SDK.
func (s *Scanner) Object(member func(key []byte) error) error {
	if s.Peek() != '{' {
		return ErrUnhandled
	}
	s.i++
	if s.Peek() == '}' {
		s.i++
		return nil
	}
	for {
		key, esc, err := s.RawString()
		if err != nil || esc {
			return ErrUnhandled
		}
		if s.Peek() != ':' {
			return ErrUnhandled
		}
		s.i++
		if err := member(key); err != nil {
			return err
		}
		switch s.Peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return ErrUnhandled
		}
	}
}

// Array calls elem for each element, positioned at it.
func (s *Scanner) Array(elem func() error) error {
	if s.Peek() != '[' {
		return ErrUnhandled
	}
	s.i++
	if s.Peek() == ']' {
		s.i++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		switch s.Peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return ErrUnhandled
		}
	}
}

// Base64String returns the content of a string that may only hold base64,
// such as record data, most of an answer's bytes: as bytes, and as a
// substring of the body. It stops at the first quote without looking at
// what comes before: an escape or a control character is no base64, so the
// caller's base64 decoder rejects the value.
func (s *Scanner) Base64String() (raw []byte, text string, err error) {
	if s.Peek() != '"' {
		return nil, "", ErrUnhandled
	}
	start := s.i + 1
	end := bytes.IndexByte(s.b[start:], '"')
	if end < 0 {
		return nil, "", ErrUnhandled
	}
	s.i = start + end + 1
	return s.b[start : start+end], s.text[start : start+end], nil
}

// RawString returns a string's bytes between the quotes, and whether it
// holds escapes.
func (s *Scanner) RawString() (raw []byte, escaped bool, err error) {
	if s.Peek() != '"' {
		return nil, false, ErrUnhandled
	}
	start := s.i + 1
	// Most strings hold neither escapes nor control characters: find the
	// closing quote with IndexByte and check the bytes before it once.
	if end := bytes.IndexByte(s.b[start:], '"'); end >= 0 && plain(s.b[start:start+end]) {
		s.i = start + end + 1
		return s.b[start : start+end], false, nil
	}
	for j := start; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			s.i = j + 1
			return s.b[start:j], escaped, nil
		case c == '\\':
			escaped = true
			n := escapeLen(s.b[j+1:])
			if n == 0 {
				return nil, false, ErrUnhandled
			}
			j += n
		case c < 0x20:
			return nil, false, ErrUnhandled
		}
	}
	return nil, false, ErrUnhandled
}

// escapeLen is the length of a valid escape after its backslash (1, or 5
// for \uXXXX), or 0 for an invalid one: what Skip passes over must be JSON.
func escapeLen(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	switch b[0] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 1
	case 'u':
		if len(b) < 5 {
			return 0
		}
		for _, c := range b[1:5] {
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return 0
			}
		}
		return 5
	}
	return 0
}

// plain reports whether b holds neither a backslash nor a control
// character, so that it is a JSON string's content as it is.
func plain(b []byte) bool {
	// Eight bytes a step (SWAR): a byte below 0x20, or a backslash, sets
	// its top bit in the test; bytes of 0x80 and above never do.
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b)
		y := x ^ ('\\' * ones) // a backslash becomes zero
		if ((x-0x20*ones)|(y-ones))&^x&highs != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c < 0x20 || c == '\\' {
			return false
		}
	}
	return true
}

// String returns a string value: a substring of the body, or decoded by
// encoding/json when it holds escapes.
func (s *Scanner) String() (string, error) {
	raw, esc, err := s.RawString()
	if err != nil {
		return "", err
	}
	from := s.i - 1 - len(raw)
	if !esc {
		return s.text[from : s.i-1], nil
	}
	var v string
	if err := json.Unmarshal(s.b[from-1:s.i], &v); err != nil {
		return "", ErrUnhandled
	}
	return v, nil
}

// Number returns the bytes of a number, or nil when what comes next is
// not a JSON number (01, .5, +1 and 1e are not).
func (s *Scanner) Number() []byte {
	s.ws()
	b, i := s.b, s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digits(b, i)
	default:
		return nil
	}
	if i < len(b) && b[i] == '.' {
		if i = digits(b, i+1); b[i-1] == '.' {
			return nil
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return nil
		}
		i = j
	}
	start := s.i
	s.i = i
	return b[start:i]
}

// digits is the index after the run of digits that starts at i.
func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// Int reads an integer.
func (s *Scanner) Int() (int64, error) {
	n, err := strconv.ParseInt(string(s.Number()), 10, 64)
	if err != nil {
		return 0, ErrUnhandled
	}
	return n, nil
}

// Float reads a number as a float64.
func (s *Scanner) Float() (float64, error) {
	n := s.Number()
	if f, ok := exactDecimal(n); ok {
		return f, nil
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return 0, ErrUnhandled
	}
	return f, nil
}

// exactDecimal reads a number written as digits with an optional fraction
// (an arrival time: 1764430000.123) when its digits, at most 15, make an
// integer m that float64 holds exactly and its fraction has k digits: then
// m / 10^k is one correctly rounded division of two exact values, which is
// exactly what strconv.ParseFloat returns (its own fast path, without
// reading the text twice). Anything else (an exponent, more digits) is
// left to ParseFloat.
func exactDecimal(b []byte) (float64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	var m uint64
	digits, k := 0, -1
	for i, c := range b {
		switch {
		case '0' <= c && c <= '9':
			m = m*10 + uint64(c-'0')
			digits++
		case c == '.' && k < 0:
			k = len(b) - i - 1
		default:
			return 0, false
		}
	}
	if digits == 0 || digits > 15 {
		return 0, false
	}
	f := float64(m)
	if k > 0 {
		f /= exactPow10[k] // k <= 15 < len(exactPow10)
	}
	if neg {
		f = -f
	}
	return f, true
}

// exactPow10 are the powers of ten float64 holds exactly.
var exactPow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// Bool reads true or false.
func (s *Scanner) Bool() (bool, error) {
	switch s.Peek() {
	case 't':
		return true, s.literal("true")
	case 'f':
		return false, s.literal("false")
	}
	return false, ErrUnhandled
}

// Skip passes over any value.
func (s *Scanner) Skip() error {
	switch s.Peek() {
	case '{':
		return s.Object(func([]byte) error { return s.Skip() })
	case '[':
		return s.Array(s.Skip)
	case '"':
		_, _, err := s.RawString()
		return err
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	}
	if len(s.Number()) == 0 {
		return ErrUnhandled
	}
	return nil
}

func (s *Scanner) literal(word string) error {
	if !bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		return ErrUnhandled
	}
	s.i += len(word)
	return nil
}
