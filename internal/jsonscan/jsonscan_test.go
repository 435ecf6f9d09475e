package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
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

// exactDecimal's numbers are exactly what strconv.ParseFloat reads, and it
// leaves every other number to ParseFloat.
func TestExactDecimalAgreesWithParseFloat(t *testing.T) {
	cases := []string{"0", "-0", "7", "1764430000.123", "1764430000.999", "1764430000.1", "1.7644300001234E9", "0.1", "-12.5",
		"123456789012345", "1234567890123456", "0.00000000000001", "0.000000000000001", "99999999999999.9", "1e5", ""}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		cases = append(cases, strconv.FormatFloat(float64(r.Int64N(1e15))/math.Pow10(r.IntN(16)), 'f', -1, 64),
			fmt.Sprintf("%d.%03d", 1700000000+r.IntN(1e8), r.IntN(1000)))
	}
	for _, c := range cases {
		f, ok := exactDecimal([]byte(c))
		want, err := strconv.ParseFloat(c, 64)
		if ok && (err != nil || math.Float64bits(f) != math.Float64bits(want)) {
			t.Fatalf("%q: exactDecimal %v, ParseFloat %v (%v)", c, f, want, err)
		}
	}
	if _, ok := exactDecimal([]byte("1764430000.123")); !ok {
		t.Fatal("an arrival time was left to ParseFloat")
	}
}

// plain, eight bytes a step, says what a byte-by-byte look says: no byte
// below 0x20 and no backslash.
func TestPlainAgreesWithBytewise(t *testing.T) {
	bytewise := func(b []byte) bool {
		for _, c := range b {
			if c < 0x20 || c == '\\' {
				return false
			}
		}
		return true
	}
	r := rand.New(rand.NewPCG(3, 4))
	special := []byte{0, 0x1f, 0x20, '\\', 0x5b, 0x5d, 0x7f, 0x80, 0x9c, 0xdc, 0xff, 'a', '"'}
	for range 200000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			if r.IntN(4) == 0 {
				b[i] = special[r.IntN(len(special))]
			} else {
				b[i] = byte(0x20 + r.IntN(0x60))
			}
		}
		if plain(b) != bytewise(b) {
			t.Fatalf("%q: plain %v", b, plain(b))
		}
	}
}
