package jsonscan

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"
)

// decode reads any value with the Scanner's methods, the way the answer
// decoders do: objects become maps, arrays slices, numbers json.Numbers
// holding their text. It is the Scanner's view of a document, to compare
// with encoding/json's.
func decode(s *Scanner) (any, error) {
	switch s.Peek() {
	case '{':
		m := map[string]any{}
		err := s.Object(func(key []byte) error {
			v, err := decode(s)
			m[string(key)] = v
			return err
		})
		return m, err
	case '[':
		l := []any{}
		err := s.Array(func() error {
			v, err := decode(s)
			l = append(l, v)
			return err
		})
		return l, err
	case '"':
		return s.String()
	case 't', 'f':
		return s.Bool()
	case 'n':
		if s.Null() {
			return nil, nil
		}
		return nil, ErrUnhandled
	}
	n := s.Number()
	if len(n) == 0 {
		return nil, ErrUnhandled
	}
	return json.Number(n), nil
}

// decodeAll decodes one whole document: nothing but white space may follow.
func decodeAll(body []byte) (any, error) {
	s := New(body)
	v, err := decode(s)
	if err == nil && !s.End() {
		err = ErrUnhandled
	}
	return v, err
}

// stdlib is encoding/json's view of the same document.
func stdlib(body []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, errors.New("more than one document")
	}
	return v, nil
}

func TestDecodeMatchesEncodingJSON(t *testing.T) {
	docs := []string{
		`{}`, `[]`, `null`, `true`, `false`, `0`, `-1`, `12.5e-3`, `1E+9`, `""`,
		` { "a" : [ 1 , 2.5 , "x" , null , true , false , { } , [ ] ] } `,
		"\t\r\n[\"tab\"]\n",
		`{"Records":[{"Data":"aGVsbG8=","SequenceNumber":"49590338271490256608559692538361571095921575989136588898","ApproximateArrivalTimestamp":1.7337e9,"PartitionKey":"pk"}],"MillisBehindLatest":0,"NextShardIterator":"AAAA"}`,
		`{"s":"esc \" \\ \/ \b \f \n \r \t \u00e9 \ud83d\ude00"}`,
		`{"dup":1,"dup":2}`,
		`["ünïcödé", "日本"]`,
		`{"Items":[{"leaseKey":{"S":"shardId-000000000000"},"leaseCounter":{"N":"42"}}],"Count":1,"ScannedCount":1}`,
	}
	for _, d := range docs {
		got, err := decodeAll([]byte(d))
		if err != nil {
			t.Errorf("%s: %v", d, err)
			continue
		}
		want, err := stdlib([]byte(d))
		if err != nil {
			t.Fatalf("%s: encoding/json: %v", d, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\nscanner       %#v\nencoding/json %#v", d, got, want)
		}
	}
}

// TestMalformedIsUnhandled: broken documents are refused with ErrUnhandled,
// never half-read as something else.
func TestMalformedIsUnhandled(t *testing.T) {
	docs := []string{
		``, ` `, `{`, `}`, `[`, `]`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[1 2]`, `{"a":1 "b":2}`,
		`{a:1}`, `"unterminated`, `"ctl` + "\x01" + `"`, `"new` + "\n" + `line"`, `tru`, `nul`, `fals`,
		`[1]x`, `{} {}`, `-`, `"\`, `{"k\"ey":1}`, // a key with an escape is left to the SDK
		`01`, `-01`, `.5`, `+1`, `1.`, `1e`, `1e+`, `--1`, `0x10`, `[1.e3]`, `"\q"`, `"\u12"`, `"\u12G4"`,
	}
	for _, d := range docs {
		if v, err := decodeAll([]byte(d)); !errors.Is(err, ErrUnhandled) {
			t.Errorf("%q: %#v, %v; want ErrUnhandled", d, v, err)
		}
	}
}

func TestScalars(t *testing.T) {
	s := New([]byte(` 42 -7 1.5e3 true false null "x" 9223372036854775808 1.5 `))
	if n, err := s.Int(); err != nil || n != 42 {
		t.Errorf("Int: %d, %v", n, err)
	}
	if n, err := s.Int(); err != nil || n != -7 {
		t.Errorf("Int: %d, %v", n, err)
	}
	if f, err := s.Float(); err != nil || f != 1500 {
		t.Errorf("Float: %v, %v", f, err)
	}
	if b, err := s.Bool(); err != nil || !b {
		t.Errorf("Bool: %v, %v", b, err)
	}
	if b, err := s.Bool(); err != nil || b {
		t.Errorf("Bool: %v, %v", b, err)
	}
	if s.Peek() != 'n' || !s.Null() {
		t.Error("Null did not take null")
	}
	if s.Null() {
		t.Error("Null took a string")
	}
	if _, err := s.Bool(); !errors.Is(err, ErrUnhandled) {
		t.Errorf("Bool on a string: %v", err)
	}
	if v, err := s.String(); err != nil || v != "x" {
		t.Errorf("String: %q, %v", v, err)
	}
	if _, err := s.Int(); !errors.Is(err, ErrUnhandled) {
		t.Errorf("Int beyond int64: %v, want ErrUnhandled", err)
	}
	if _, err := s.Int(); !errors.Is(err, ErrUnhandled) {
		t.Errorf("Int of 1.5: %v, want ErrUnhandled", err)
	}
	if !s.End() || s.Peek() != 0 || len(s.Rest()) != 0 {
		t.Errorf("not at the end: %q", s.Rest())
	}
	if f, err := New([]byte(`1e400`)).Float(); !errors.Is(err, ErrUnhandled) {
		t.Errorf("Float out of range: %v, %v", f, err)
	}
	if f, err := New([]byte(`-0`)).Float(); err != nil || !math.Signbit(f) {
		t.Errorf("Float -0: %v, %v", f, err)
	}
}

func TestRawStringReportsEscapes(t *testing.T) {
	for _, c := range []struct {
		doc, raw string
		esc      bool
	}{
		{`"plain"`, `plain`, false},
		{`""`, ``, false},
		{`"a\"b"`, `a\"b`, true},
		{`"a\\"`, `a\\`, true},
		{`"\u0041"`, `\u0041`, true},
	} {
		s := New([]byte(c.doc))
		raw, esc, err := s.RawString()
		if err != nil || string(raw) != c.raw || esc != c.esc || !s.End() {
			t.Errorf("%s: %q %v %v, want %q %v", c.doc, raw, esc, err, c.raw, c.esc)
		}
	}
}

// TestStringsShareTheBody: what New promises, and why body must not
// change: a string without escapes is the body's own bytes; one with
// escapes is a copy.
func TestStringsShareTheBody(t *testing.T) {
	body := []byte(`["shared", "cop\u0069ed"]`)
	var got []string
	s := New(body)
	if err := s.Array(func() error {
		v, err := s.String()
		got = append(got, v)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got[0] != "shared" || got[1] != "copied" {
		t.Fatalf("%q", got)
	}
	inBody := func(v string) bool {
		p, start := uintptr(unsafe.Pointer(unsafe.StringData(v))), uintptr(unsafe.Pointer(&body[0]))
		return p >= start && p < start+uintptr(len(body))
	}
	if !inBody(got[0]) {
		t.Error("a string without escapes was copied")
	}
	if inBody(got[1]) {
		t.Error("a string with escapes points into the body")
	}
	copy(body[2:], "SHARED")
	if got[0] != "SHARED" {
		t.Errorf("%q: the shared string did not see the body change", got[0])
	}
}

func TestBase64String(t *testing.T) {
	body := []byte(` "aGVsbG8=" , "x`)
	s := New(body)
	raw, text, err := s.Base64String()
	if err != nil || string(raw) != "aGVsbG8=" || text != "aGVsbG8=" {
		t.Fatalf("%q %q %v", raw, text, err)
	}
	if s.Peek() != ',' {
		t.Fatalf("left at %q", s.Rest())
	}
	s.i++ // past the comma
	if _, _, err := s.Base64String(); !errors.Is(err, ErrUnhandled) {
		t.Errorf("unterminated: %v", err)
	}
	if _, _, err := New([]byte(`12`)).Base64String(); !errors.Is(err, ErrUnhandled) {
		t.Errorf("not a string: %v", err)
	}
}

func TestSkip(t *testing.T) {
	s := New([]byte(`{"skip":{"a":[1,{"b":"c\"d"},[true,false,null]],"e":-1.5e2},"keep":7}`))
	var keep int64
	err := s.Object(func(key []byte) error {
		if string(key) == "keep" {
			var err error
			keep, err = s.Int()
			return err
		}
		return s.Skip()
	})
	if err != nil || keep != 7 || !s.End() {
		t.Errorf("keep %d, %v, rest %q", keep, err, s.Rest())
	}
	for _, bad := range []string{`x`, `{"a":x}`, `[1,`, `"open`, `"\q"`, `"\u00"`, `"\`, `+1`, `.5`, `1e`} {
		if err := New([]byte(bad)).Skip(); !errors.Is(err, ErrUnhandled) {
			t.Errorf("Skip %q: %v", bad, err)
		}
	}
}

// FuzzScan: the Scanner never panics or reads past its input, and a
// document it reads whole is valid JSON with encoding/json's values. It
// may refuse valid JSON (escaped keys are left to the SDK). Strings are
// compared only in valid UTF-8: the Scanner hands unescaped bytes on as
// they are, where encoding/json would write U+FFFD; AWS answers are UTF-8.
func FuzzScan(f *testing.F) {
	for _, seed := range []string{
		`{}`, `[]`, `null`, `{"a":[1,2.5,"x",null,true,false,{},[]]}`, `"esc \" \\ \u00e9 \ud83d\ude00"`,
		`{"Records":[{"Data":"aGVsbG8=","SequenceNumber":"4959","ApproximateArrivalTimestamp":1.7337e9}],"MillisBehindLatest":0}`,
		`{"Items":[{"leaseKey":{"S":"shardId-0"},"leaseCounter":{"N":"42"},"x":{"L":[{"BOOL":true}]}}],"Count":1}`,
		`01`, `.5`, `+1`, `1e`, `-`, `"\q"`, `"\u12"`, `{"a":1,}`, "\"\xff\"", `[1]x`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		sk := New(body)
		skipped := sk.Skip() == nil && sk.End()
		if skipped && !json.Valid(body) {
			t.Fatalf("%q: not JSON, but Skip passed over it", body)
		}
		got, err := decodeAll(body)
		if err == nil && !skipped {
			t.Fatalf("%q: read, but Skip refused it", body)
		}
		if err != nil {
			if !errors.Is(err, ErrUnhandled) {
				t.Fatalf("%q: error %v is not ErrUnhandled", body, err)
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("%q: not JSON, but the Scanner read %#v", body, got)
		}
		if !utf8.Valid(body) {
			return
		}
		want, err := stdlib(body)
		if err != nil {
			t.Fatalf("%q: encoding/json: %v", body, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\nscanner       %#v\nencoding/json %#v", body, got, want)
		}
	})
}

// Float reads every JSON number as strconv.ParseFloat reads it, to the
// bit, whichever way it takes (one exact operation or ParseFloat), and
// refuses what is no JSON number.
func TestFloatAgreesWithParseFloat(t *testing.T) {
	cases := []string{"0", "-0", "7", "1764430000.123", "1764430000.999", "1764430000.1", "1.7644300001234E9", "1.441215410867E9", "0.1", "-12.5",
		"123456789012345", "1234567890123456", "0.00000000000001", "0.000000000000001", "99999999999999.9", "1e5", "1E+22", "1e23", "1e-22",
		"1e-23", "123456789012345e22", "123456789012345e-22", "9007199254740993", "1.5e0000000000000000000003", "1e400", "-1e400", "1e-400",
		"4.9e-324", "1.7976931348623157e308", "0e0", "-0.0e-0", "10.25E-1", "0.1e1"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		cases = append(cases, strconv.FormatFloat(float64(r.Int64N(1e15))/math.Pow10(r.IntN(16)), 'f', -1, 64),
			fmt.Sprintf("%d.%03d", 1700000000+r.IntN(1e8), r.IntN(1000)),
			fmt.Sprintf("%d.%dE%d", r.IntN(10), r.Int64N(1e15), r.IntN(50)-25),
			strconv.FormatFloat(math.Float64frombits(r.Uint64()), "eEfg"[r.IntN(4)], -1, 64))
	}
	for _, c := range cases {
		want, werr := strconv.ParseFloat(c, 64)
		sc := New([]byte(c + " ,"))
		f, err := sc.Float()
		if err == nil && sc.Peek() != ',' {
			err = ErrUnhandled // a number, then something else
		}
		if json.Valid([]byte(c)) && werr == nil {
			if err != nil || math.Float64bits(f) != math.Float64bits(want) {
				t.Fatalf("%q: Float %v (%v), ParseFloat %v", c, f, err, want)
			}
		} else if err == nil {
			t.Fatalf("%q: Float %v; ParseFloat %v, JSON %v", c, f, werr, json.Valid([]byte(c)))
		}
	}
	for _, bad := range []string{"01", "-01", ".5", "+1", "1.", "1e", "1e+", "-", "--1", "0x10", "", "NaN", "Infinity"} {
		if sc := New([]byte(bad)); func() bool { _, err := sc.Float(); return err == nil }() && sc.End() {
			t.Errorf("%q: read as a number", bad)
		}
	}
}

// stringStops and base64Stops, eight bytes a step, mark exactly the bytes
// a byte-by-byte look marks: every byte value in every lane, beside
// neighbours of every kind (a carry or borrow between lanes would show).
func TestStopsAgreeWithBytewise(t *testing.T) {
	stringStop := func(c byte) bool { return c < 0x20 || c == '"' || c == '\\' }
	base64Stop := func(c byte) bool { return !base64Alphabet[c] }
	check := func(x uint64) {
		t.Helper()
		s, b := stringStops(x), base64Stops(x)
		for lane := range 8 {
			c := byte(x >> (8 * lane))
			bit := uint64(0x80) << (8 * lane)
			if (s&bit != 0) != stringStop(c) || (b&bit != 0) != base64Stop(c) {
				t.Fatalf("%#016x lane %d (%#02x): stringStops %#016x, base64Stops %#016x", x, lane, c, s, b)
			}
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for v := range 256 {
		for lane := range 8 {
			for _, fill := range []uint64{0, ones * 0xff, ones * 0x7f, ones * 0x80, ones * 'A', ones * '"', ones * 0x1f, r.Uint64(), r.Uint64()} {
				check(fill&^(0xff<<(8*lane)) | uint64(v)<<(8*lane))
			}
		}
	}
	for range 1000000 {
		check(r.Uint64())
	}
}

// Base64 takes exactly the strings whose content base64's decoder takes
// and a JSON string may hold as it is (no escapes, no control bytes), with
// the length it decodes to, at every offset of the eight-byte steps.
func TestBase64AgreesWithTheDecoder(t *testing.T) {
	cases := []string{"", "QQ==", "QUI=", "QUJD", "aGVsbG8sIGtpbmVzaXM=", "+/+/", "QQ=", "Q===", "QQ=A", "QUJD\n", "QUJD\r\nQUJD", "QU JD",
		`QU\/D`, "QUJD!!!!", "QUJDRA==QUJD", "84maAAAA", "====", "QUJDRA=", "QUJDRA===", "QUJD\x80", "\xc3\xa9AA", "QUJD-_==", "QUJD.,==", "QU@D", "QU[D", "QU`D", "QU{D", "QU:D", "AB==", "AAB=", "AA==", "QR==", "QUJ/", "QUI+"}
	r := rand.New(rand.NewPCG(5, 6))
	for n := range 80 {
		cases = append(cases, base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{byte(n * 7)}, n)))
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		enc := []byte(base64.StdEncoding.EncodeToString(b))
		if len(enc) > 0 {
			if c := byte(r.IntN(128)); c != '"' { // a quote would end the string
				enc[r.IntN(len(enc))] = c // mostly breaks it
			}
		}
		cases = append(cases, string(enc))
	}
	for _, c := range cases {
		for lead := range 9 {
			body := []byte(strings.Repeat(" ", lead) + `"` + c + `",`)
			raw, text, n, err := New(body).Base64()
			d, derr := base64.StdEncoding.DecodeString(c)
			jsonPlain := !strings.ContainsAny(c, "\\\"") && !strings.ContainsFunc(c, func(r rune) bool { return r < 0x20 })
			canonical := base64.StdEncoding.EncodeToString(d) == c // "AB==" is not
			if want := derr == nil && jsonPlain && canonical; (err == nil) != want {
				t.Fatalf("%q: Base64 error %v; the decoder %v", c, err, derr)
			}
			if err == nil && (string(raw) != c || text != c || n != len(d)) {
				t.Fatalf("%q: Base64 %q %q %d, want %d bytes", c, raw, text, n, len(d))
			}
		}
	}
}

// RawString, eight bytes a step, ends a string where a byte-by-byte look
// does, at every offset, and refuses what holds a control byte.
func TestRawStringAgreesWithBytewise(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	special := []byte{0, 0x1f, 0x20, '\\', '"', 0x5b, 0x5d, 0x7f, 0x80, 0x9c, 0xa2, 0xdc, 0xff, 'a', 'u', 'n', '0'}
	for range 200000 {
		b := make([]byte, 1+r.IntN(40))
		b[0] = '"'
		for i := 1; i < len(b); i++ {
			if r.IntN(4) == 0 {
				b[i] = special[r.IntN(len(special))]
			} else {
				b[i] = byte(0x20 + r.IntN(0x60))
			}
		}
		raw, esc, err := New(b).RawString()
		var want []byte
		wantEsc, ok := false, false
	scan:
		for j := 1; j < len(b); j++ {
			switch c := b[j]; {
			case c == '"':
				want, ok = b[1:j], true
				break scan
			case c == '\\':
				n := escapeLen(b[j+1:])
				if n == 0 {
					break scan
				}
				wantEsc = true
				j += n
			case c < 0x20:
				break scan
			}
		}
		if (err == nil) != ok || err == nil && (!bytes.Equal(raw, want) || esc != wantEsc) {
			t.Fatalf("%q: %q %v %v, want %q %v %v", b, raw, esc, err, want, wantEsc, ok)
		}
	}
}

// NextKeyOf reads every object as NextKey does, with the index of each
// key among its keys: keys written plainly or with white space, escaped,
// unknown, sharing a first byte or a prefix with one of the keys, broken.
func TestNextKeyOfAgreesWithNextKey(t *testing.T) {
	names := []string{"Data", "PartitionKey", "SequenceNumber", "ApproximateArrivalTimestamp"}
	keys := NewKeys(names...)
	pieces := []string{`"Data"`, `"PartitionKey"`, `"SequenceNumber"`, `"ApproximateArrivalTimestamp"`, `"Dat"`, `"DataX"`, `"D"`, `"Other"`,
		`"D\u0061ta"`, `"P"`, `"SequenceNumbe`, `""`, `"é"`, ":", ": ", " :", "1", `"v"`, "{}", ",", " , ", "}", " ", "\n", `"`, "x"}
	r := rand.New(rand.NewPCG(9, 10))
	for range 100000 {
		var b strings.Builder
		b.WriteString("{")
		for range r.IntN(8) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		body := []byte(b.String())
		s1, s2 := New(body), New(body)
		if s1.ObjectStart() != nil || s2.ObjectStart() != nil {
			t.Fatal("no object")
		}
		for first := true; ; first = false {
			key, more, err := s1.NextKey(first)
			idx, more2, err2 := s2.NextKeyOf(first, keys)
			want := -1
			if err == nil && more {
				want = slices.Index(names, string(key))
			}
			if (err == nil) != (err2 == nil) || err == nil && (more != more2 || idx != want || s1.i != s2.i) {
				t.Fatalf("%q: NextKey %q %v %v at %d; NextKeyOf %d %v %v at %d", body, key, more, err, s1.i, idx, more2, err2, s2.i)
			}
			if err != nil || !more || s1.Skip() != nil || s2.Skip() != nil {
				break
			}
		}
	}
}
