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
	"encoding/json"
	"errors"
	"math/bits"
	"strconv"
	"strings"
	"unsafe"
)

// ErrUnhandled is returned for malformed JSON and for anything the fast
// decoders leave to the SDK.
var ErrUnhandled = errors.New("json answer: left to the SDK's decoder")

// Scanner reads one JSON document. Every method skips leading white space.
// The methods read the body and their position into locals and store the
// position once: they are called a dozen times for every record of a page,
// and going through the pointer for every byte was a third of the work.
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
	s.i = skipWS(s.b, s.i)
	return s.i == len(s.b)
}

// skipWS is the index of the first byte at or after i that is not white
// space.
func skipWS(b []byte, i int) int {
	// AWS answers hold no white space between tokens: one test passes.
	if i < len(b) && b[i] > ' ' {
		return i
	}
	for ; i < len(b); i++ {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
		default:
			return i
		}
	}
	return i
}

// Peek returns the next byte that is not white space, or 0 at the end.
func (s *Scanner) Peek() byte {
	s.i = skipWS(s.b, s.i)
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// Null consumes a null if one comes next.
func (s *Scanner) Null() bool {
	b := s.b
	i := skipWS(b, s.i)
	if i+4 <= len(b) && string(b[i:i+4]) == "null" {
		s.i = i + 4
		return true
	}
	return false
}

// Object calls member for each key, positioned at its value. Keys that
// hold escapes are left to the SDK.
func (s *Scanner) Object(member func(key []byte) error) error {
	if err := s.ObjectStart(); err != nil {
		return err
	}
	for first := true; ; first = false {
		key, more, err := s.NextKey(first)
		if err != nil || !more {
			return err
		}
		if err := member(key); err != nil {
			return err
		}
	}
}

// ObjectStart consumes the brace that opens an object, whose members
// NextKey then reads: the hot loops read them so, without a call through
// a closure for every member.
func (s *Scanner) ObjectStart() error { return s.open('{') }

// NextKey reads the key of the next member of an object begun with
// ObjectStart, and the colon after it, leaving the scanner at the value;
// first says that no member has been read yet. At the closing brace it
// consumes it and returns more false. Keys that hold escapes are left to
// the SDK.
func (s *Scanner) NextKey(first bool) (key []byte, more bool, err error) {
	b := s.b
	i := skipWS(b, s.i)
	if i >= len(b) {
		return nil, false, ErrUnhandled
	}
	switch c := b[i]; {
	case c == '}':
		s.i = i + 1
		return nil, false, nil
	case first:
	case c == ',':
		i = skipWS(b, i+1)
	default:
		return nil, false, ErrUnhandled
	}
	if i >= len(b) || b[i] != '"' {
		return nil, false, ErrUnhandled
	}
	end, esc, ok := stringEnd(b, i+1)
	if !ok || esc {
		return nil, false, ErrUnhandled
	}
	key = b[i+1 : end]
	i = skipWS(b, end+1)
	if i >= len(b) || b[i] != ':' {
		return nil, false, ErrUnhandled
	}
	s.i = i + 1
	return key, true, nil
}

// Keys is a set of member names with distinct first bytes, for NextKeyOf.
type Keys struct {
	names []string
	// follow[c] is 1 + the index of the name that begins with c, whose
	// form as an answer writes it, `name":`, is tails[index].
	follow [256]uint8
	tails  []string
}

// NewKeys prepares names, which must begin with distinct bytes and need
// no escapes.
func NewKeys(names ...string) *Keys {
	k := &Keys{names: names}
	for i, n := range names {
		if n == "" || k.follow[n[0]] != 0 || i >= 255 || strings.ContainsFunc(n, func(r rune) bool { return r < 0x20 || r == '"' || r == '\\' }) {
			panic("jsonscan.NewKeys: names must be non-empty, at most 255, need no escapes, and begin with distinct bytes")
		}
		k.follow[n[0]] = uint8(i + 1)
		k.tails = append(k.tails, n+`":`)
	}
	return k
}

// NextKeyOf is NextKey for an object whose members are mostly among keys:
// it returns the index in keys of the key read instead of the key, -1 for
// any other key. A key written as answers write it (a quote, the name, a quote and
// the colon) is matched by one comparison, without scanning it for its end:
// most of the work of reading a record's five keys.
func (s *Scanner) NextKeyOf(first bool, keys *Keys) (idx int, more bool, err error) {
	b := s.b
	i := skipWS(b, s.i)
	if i >= len(b) {
		return -1, false, ErrUnhandled
	}
	switch c := b[i]; {
	case c == '}':
		s.i = i + 1
		return -1, false, nil
	case first:
	case c == ',':
		i = skipWS(b, i+1)
	default:
		return -1, false, ErrUnhandled
	}
	if i+1 >= len(b) || b[i] != '"' {
		return -1, false, ErrUnhandled
	}
	if k := int(keys.follow[b[i+1]]) - 1; k >= 0 {
		if t := keys.tails[k]; len(b)-(i+1) >= len(t) && string(b[i+1:i+1+len(t)]) == t {
			s.i = i + 1 + len(t)
			return k, true, nil
		}
	}
	end, esc, ok := stringEnd(b, i+1)
	if !ok || esc {
		return -1, false, ErrUnhandled
	}
	key := b[i+1 : end]
	i = skipWS(b, end+1)
	if i >= len(b) || b[i] != ':' {
		return -1, false, ErrUnhandled
	}
	s.i = i + 1
	for k, n := range keys.names {
		if string(key) == n {
			return k, true, nil
		}
	}
	return -1, true, nil
}

// Array calls elem for each element, positioned at it.
func (s *Scanner) Array(elem func() error) error {
	if err := s.ArrayStart(); err != nil {
		return err
	}
	for first := true; ; first = false {
		more, err := s.NextElem(first)
		if err != nil || !more {
			return err
		}
		if err := elem(); err != nil {
			return err
		}
	}
}

// ArrayStart consumes the bracket that opens an array, whose elements
// NextElem then steps to.
func (s *Scanner) ArrayStart() error { return s.open('[') }

// open consumes the byte c after any white space.
func (s *Scanner) open(c byte) error {
	i := skipWS(s.b, s.i)
	if i >= len(s.b) || s.b[i] != c {
		return ErrUnhandled
	}
	s.i = i + 1
	return nil
}

// NextElem moves to the next element of an array begun with ArrayStart;
// first says that none has been read yet. At the closing bracket it
// consumes it and returns more false.
func (s *Scanner) NextElem(first bool) (more bool, err error) {
	b := s.b
	i := skipWS(b, s.i)
	if i >= len(b) {
		return false, ErrUnhandled
	}
	switch c := b[i]; {
	case c == ']':
		s.i = i + 1
		return false, nil
	case first:
		s.i = i
	case c == ',':
		s.i = i + 1
	default:
		return false, ErrUnhandled
	}
	return true, nil
}

// Base64String returns the content of a string that holds plain padded
// base64, such as record data, most of an answer's bytes: as bytes, and as
// a substring of the body. Anything else (other bytes, an escape, a line
// break, missing padding) is ErrUnhandled: a JSON string that holds such
// text is no base64 the SDK's decoder takes, or means what only the SDK
// may say.
func (s *Scanner) Base64String() (raw []byte, text string, err error) {
	raw, text, _, err = s.Base64()
	return raw, text, err
}

// Unchecked returns the content of a string up to the first quote, as
// bytes and as a substring of the body, found with bytes.IndexByte and
// not checked at all: only for a caller whose own check of the content
// refuses a backslash and control characters, such as a base64 decoder
// followed by a check of the length it decoded (runner's record data).
func (s *Scanner) Unchecked() (raw []byte, text string, err error) {
	b := s.b
	q := skipWS(b, s.i)
	if q >= len(b) || b[q] != '"' {
		return nil, "", ErrUnhandled
	}
	n := bytes.IndexByte(b[q+1:], '"')
	if n < 0 {
		return nil, "", ErrUnhandled
	}
	s.i = q + 1 + n + 1
	return b[q+1 : q+1+n], s.text[q+1 : q+1+n], nil
}

// Base64 is Base64String that also returns the length of the data the
// text encodes. It checks the alphabet and finds the closing quote in one
// pass of eight bytes a step, so that record data is read once.
func (s *Scanner) Base64() (raw []byte, text string, n int, err error) {
	b := s.b
	q := skipWS(b, s.i)
	if q >= len(b) || b[q] != '"' {
		return nil, "", 0, ErrUnhandled
	}
	start := q + 1
	j := start
	for ; j+8 <= len(b); j += 8 {
		if m := base64Stops(load8(b, j)); m != 0 {
			j += bits.TrailingZeros64(m) >> 3
			goto stop
		}
	}
	for j < len(b) && base64Alphabet[b[j]] {
		j++
	}
stop:
	// j is at the first byte out of the alphabet: up to two '=' of
	// padding, then the closing quote, after a multiple of four bytes.
	end := j
	for j < len(b) && b[j] == '=' && j-end < 2 {
		j++
	}
	if j >= len(b) || b[j] != '"' || (j-start)%4 != 0 || !Canonical64(b[start:j]) {
		return nil, "", 0, ErrUnhandled
	}
	s.i = j + 1
	return b[start:j], s.text[start:j], (j-start)/4*3 - (j - end), nil
}

// Canonical64 reports whether padded base64 text, such as Base64 reads,
// is the one text that encodes its data: before padding, the bits that
// encode nothing are zero ("AB==" decodes as "AA==" does). base64's
// decoder takes either; the text is passed on as it is, so only the
// canonical one is the text the SDK's decoded data would be encoded to.
func Canonical64(b []byte) bool {
	if len(b) < 4 || b[len(b)-1] != '=' {
		return true
	}
	unused := byte(0x3) // one '=': two bits
	c := b[len(b)-2]
	if c == '=' {
		unused, c = 0xf, b[len(b)-3] // two: four bits
	}
	var v byte
	switch {
	case 'A' <= c && c <= 'Z':
		v = c - 'A'
	case 'a' <= c && c <= 'z':
		v = c - 'a' + 26
	case '0' <= c && c <= '9':
		v = c - '0' + 52
	case c == '+':
		v = 62
	default:
		v = 63
	}
	return v&unused == 0
}

// load8 is the eight bytes from b[i] on, the first in the low bits (as
// binary.LittleEndian reads them); the caller has checked that i+8 <=
// len(b). Read through a pointer: a slice of b for each step costs more
// instructions than the step's own test.
func load8(b []byte, i int) uint64 {
	x := *(*uint64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(b)), i))
	if bigEndian {
		x = bits.ReverseBytes64(x)
	}
	return x
}

// Eight bytes a step (SWAR): each test sets the top bit of a byte's lane
// in its result. Every byte is first cut to seven bits (t), so that no sum
// carries into the next lane, and bytes of 0x80 and above are told apart
// by their own top bit.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
	lows  = 0x7f7f7f7f7f7f7f7f
)

// stringStops marks the bytes that end a plain run of a JSON string: a
// quote, a backslash and control characters (below 0x20).
func stringStops(x uint64) uint64 {
	t := x & lows
	quote := (t ^ '"'*ones) + lows  // top bit clear: a quote
	slash := (t ^ '\\'*ones) + lows // top bit clear: a backslash
	ctl := t + (0x80-0x20)*ones     // top bit clear: below 0x20
	return ^(quote&slash&ctl | x) & highs
}

// Plain reports whether s goes into a JSON string as it is, with nothing
// to escape: ASCII from the space up (0x7f included), without the quote
// and the backslash. Eight bytes a step: the encoders ask it of every
// sequence number and partition key they write.
func Plain(s string) bool {
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if x := load8(b, i); stringStops(x)|x&highs != 0 {
			return false
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// base64Stops marks the bytes out of the standard base64 alphabet.
func base64Stops(x uint64) uint64 {
	t := x & lows
	y := t | 0x20*ones                                       // upper case to lower case
	letter := (y + (0x80-'a')*ones) &^ (y + (0x7f-'z')*ones) // 'a' <= y <= 'z'
	digit := (t + (0x80-'/')*ones) &^ (t + (0x7f-'9')*ones)  // '/' <= t <= '9': a slash or a digit
	plus := ^((t ^ '+'*ones) + lows)                         // t == '+'
	return (^(letter | digit | plus) | x) & highs
}

// base64Alphabet is true for the standard base64 alphabet's bytes.
var base64Alphabet = func() (t [256]bool) {
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") {
		t[c] = true
	}
	return t
}()

// stringEnd is the index of the quote that closes the string whose
// content begins at i, and whether it holds escapes; ok is false when the
// string is not valid JSON. Most strings hold neither escapes nor control
// characters: one pass to the first byte that is a quote, a backslash or
// a control character, and if it is the quote, the string is read.
func stringEnd(b []byte, i int) (end int, escaped, ok bool) {
	for ; i+8 <= len(b); i += 8 {
		if m := stringStops(load8(b, i)); m != 0 {
			i += bits.TrailingZeros64(m) >> 3
			if b[i] == '"' {
				return i, false, true
			}
			return escapedEnd(b, i)
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' {
			return i, false, true
		} else if c == '\\' || c < 0x20 {
			return escapedEnd(b, i)
		}
	}
	return 0, false, false
}

// escapedEnd is stringEnd from a backslash or a control character on.
func escapedEnd(b []byte, i int) (end int, escaped, ok bool) {
	for ; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i, escaped, true
		case c == '\\':
			escaped = true
			n := escapeLen(b[i+1:])
			if n == 0 {
				return 0, false, false
			}
			i += n
		case c < 0x20:
			return 0, false, false
		}
	}
	return 0, false, false
}

// RawString returns a string's bytes between the quotes, and whether it
// holds escapes.
func (s *Scanner) RawString() (raw []byte, escaped bool, err error) {
	b := s.b
	i := skipWS(b, s.i)
	if i >= len(b) || b[i] != '"' {
		return nil, false, ErrUnhandled
	}
	end, esc, ok := stringEnd(b, i+1)
	if !ok {
		return nil, false, ErrUnhandled
	}
	s.i = end + 1
	return b[i+1 : end], esc, nil
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

// String returns a string value: a substring of the body, or decoded by
// encoding/json when it holds escapes.
func (s *Scanner) String() (string, error) {
	b := s.b
	i := skipWS(b, s.i)
	if i >= len(b) || b[i] != '"' {
		return "", ErrUnhandled
	}
	end, esc, ok := stringEnd(b, i+1)
	if !ok {
		return "", ErrUnhandled
	}
	s.i = end + 1
	if !esc {
		return s.text[i+1 : end], nil
	}
	var v string
	if err := json.Unmarshal(b[i:end+1], &v); err != nil {
		return "", ErrUnhandled
	}
	return v, nil
}

// Number returns the bytes of a number, or nil when what comes next is
// not a JSON number (01, .5, +1 and 1e are not).
func (s *Scanner) Number() []byte {
	b := s.b
	start := skipWS(b, s.i)
	i := start
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

// Float reads a number as a float64. A number of at most 15 digits (an
// arrival time: 1764430000.123, or 1.764430000123E9 as AWS writes it) is
// an integer m that float64 holds exactly times 10^p, and when 10^p is
// exact too (|p| <= 22), m * 10^p or m / 10^-p is one correctly rounded
// operation on two exact values: exactly what strconv.ParseFloat returns
// (its own fast path), without reading the text twice. Any other number
// is left to ParseFloat.
func (s *Scanner) Float() (float64, error) {
	b := s.b
	start := skipWS(b, s.i)
	i := start
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	var m uint64 // overflows beyond 19 digits, and is then not used
	from := i
	for ; i < len(b) && b[i]-'0' < 10; i++ {
		m = m*10 + uint64(b[i]-'0')
	}
	digits := i - from
	if digits == 0 || b[from] == '0' && digits > 1 {
		return 0, ErrUnhandled // not a number, or a leading zero
	}
	k := 0 // digits after the point
	if i < len(b) && b[i] == '.' {
		i++
		from = i
		for ; i < len(b) && b[i]-'0' < 10; i++ {
			m = m*10 + uint64(b[i]-'0')
		}
		if k = i - from; k == 0 {
			return 0, ErrUnhandled
		}
	}
	e := 0
	if i < len(b) && b[i]|0x20 == 'e' {
		i++
		eneg := i < len(b) && b[i] == '-'
		if i < len(b) && (b[i] == '+' || eneg) {
			i++
		}
		from = i
		for ; i < len(b) && b[i]-'0' < 10; i++ {
			if e < 1e6 { // far beyond float64, and far from overflowing
				e = e*10 + int(b[i]-'0')
			}
		}
		if i == from {
			return 0, ErrUnhandled
		}
		if eneg {
			e = -e
		}
	}
	s.i = i
	if p := e - k; digits+k <= 15 && -22 <= p && p <= 22 {
		f := float64(m)
		if p < 0 {
			f /= exactPow10[-p]
		} else {
			f *= exactPow10[p]
		}
		if neg {
			f = -f
		}
		return f, nil
	}
	f, err := strconv.ParseFloat(string(b[start:i]), 64)
	if err != nil {
		return 0, ErrUnhandled
	}
	return f, nil
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
