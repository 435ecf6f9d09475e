package processor

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/kinesisrec"
)

// The hand-written arrival time formatter agrees with the layout.
func TestAppendArrivalMatchesLayout(t *testing.T) {
	for _, tm := range []time.Time{
		time.Date(2025, 3, 4, 5, 6, 7, 891_999_999, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.FixedZone("x", 5*3600)),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Unix(1_700_000_000, 123_456_789),
	} {
		if got, want := string(appendArrival(nil, tm)), tm.UTC().Format(arrivalLayout); got != want {
			t.Errorf("%v: got %s, want %s", tm, got, want)
		}
	}
}

// The per-second cache gives the same text as the layout over a run of
// times that share seconds, change them, go back, and cross years.
func TestArrivalCacheMatchesLayout(t *testing.T) {
	base := time.Date(2025, 12, 31, 23, 59, 58, 0, time.UTC)
	var times []time.Time
	for _, ms := range []int{0, 1, 999, 1000, 1001, 1999, 2000, 2500, 500, 123_000} {
		times = append(times, base.Add(time.Duration(ms)*time.Millisecond))
	}
	times = append(times, time.Date(1969, 12, 31, 23, 59, 59, 7_000_000, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 5_000_000, time.UTC), time.Unix(1_700_000_000, 999_999_999).In(time.FixedZone("y", -3600)))
	var c arrivalCache
	for _, tm := range times {
		if got, want := string(c.append(nil, tm)), tm.UTC().Format(arrivalLayout); got != want {
			t.Errorf("%v: got %s, want %s", tm, got, want)
		}
	}
}

// The hand-written string encoder gives valid JSON that decodes to what
// encoding/json's encoding of the string decodes to (invalid UTF-8 as
// U+FFFD), on every byte value alone and on mixed strings; and shard ids
// repeat correctly within a batch encoder.
func TestAppendJSONStringRoundTrips(t *testing.T) {
	cases := []string{"", "shardId-000000000001", "49590338271490256608559692538361571095921575989136588898",
		`q"uote`, `back\slash`, "tab\tnew\nline\rcr", "\x00\x1f\x7f", "é☃😀", "\u2028\u2029", "<>&", "bad\xffutf8\xc3"}
	for c := range 256 {
		cases = append(cases, string([]byte{byte(c)}), "a"+string([]byte{byte(c)})+"z")
	}
	for _, s := range cases {
		enc := appendJSONString(nil, s)
		var back string
		if err := json.Unmarshal(enc, &back); err != nil {
			t.Fatalf("%q encoded as %s: %v", s, enc, err)
		}
		ref, _ := json.Marshal(s)
		var want string
		if err := json.Unmarshal(ref, &want); err != nil {
			t.Fatal(err)
		}
		if back != want {
			t.Errorf("%q: decodes as %q, encoding/json's as %q", s, back, want)
		}
	}
	var e recordEncoder
	var b []byte
	for _, shard := range []string{"shardId-1", "shardId-1", "shardId-2", "shardId-1"} {
		b = e.appendRecordJSON(b, &kinesisrec.Record{ShardID: shard, SequenceNumber: "1"})
	}
	if want := `"shardId":"shardId-1"}` + "\n"; strings.Count(string(b), want) != 3 || strings.Count(string(b), `"shardId":"shardId-2"`) != 1 {
		t.Fatalf("shard ids in batch:\n%s", b)
	}
}
