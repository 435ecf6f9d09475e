package reset

import (
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/leasecore"
)

func TestParseTime(t *testing.T) {
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for in, want := range map[string]time.Time{
		"2026-11-01T10:00:00Z":          utc("2026-11-01T10:00:00Z"),
		"2026-11-01T10:00:00.250Z":      utc("2026-11-01T10:00:00.25Z"),
		"2026-11-01T12:00:00+02:00":     utc("2026-11-01T10:00:00Z"),
		"2026-11-01T10:00Z":             utc("2026-11-01T10:00:00Z"),
		"2026-11-01T11:00+01:00":        utc("2026-11-01T10:00:00Z"),
		"2026-11-01T10Z":                utc("2026-11-01T10:00:00Z"),
		"2026-11-01T10:00":              utc("2026-11-01T10:00:00Z"),
		"2026-11-01T10:00:30":           utc("2026-11-01T10:00:30Z"),
		"2026-11-01 10:00":              utc("2026-11-01T10:00:00Z"),
		"2026-11-01":                    utc("2026-11-01T00:00:00Z"),
		"2026-11-01t10:00z":             utc("2026-11-01T10:00:00Z"),
		"1793527200":                    utc("2026-11-01T10:00:00Z"),
		"1793527200.5":                  utc("2026-11-01T10:00:00.5Z"),
		"1793527200.123":                utc("2026-11-01T10:00:00.123Z"),
		" 2026-11-01T10:00:00.123456Z ": utc("2026-11-01T10:00:00.123456Z"),
	} {
		got, err := ParseTime(in)
		if err != nil || !got.Equal(want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "yesterday", "2026-13-01", "2026-11-01T25:00Z", "10:00", "20261101", "2026-11-01T10:00+2"} {
		if _, err := ParseTime(bad); err == nil {
			t.Errorf("ParseTime(%q) accepted", bad)
		}
	}
}

func TestParseAgo(t *testing.T) {
	for in, want := range map[string]time.Duration{"2h": 2 * time.Hour, "90m": 90 * time.Minute, "1d": 24 * time.Hour, "1d12h": 36 * time.Hour, "1500ms": 1500 * time.Millisecond} {
		if got, err := ParseAgo(in); err != nil || got != want {
			t.Errorf("ParseAgo(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0s", "-2h", "2", "d", "xd", "1dx", "2 hours"} {
		if _, err := ParseAgo(bad); err == nil {
			t.Errorf("ParseAgo(%q) accepted", bad)
		}
	}
}

func TestParseCheckpoint(t *testing.T) {
	if cp, err := ParseCheckpoint("4959", 3); err != nil || cp != (leasecore.SequenceNumber{SequenceNumber: "4959", SubSequenceNumber: 3}) {
		t.Errorf("%v %v", cp, err)
	}
	for _, ok := range []string{"TRIM_HORIZON", "LATEST", "SHARD_END"} {
		if _, err := ParseCheckpoint(ok, 0); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for in, why := range map[string]string{"AT_TIMESTAMP": "use the at option", // cmd says --at (TestResetErrorsSayFlags)
		"49x": "not a sequence number", "": "not a sequence number"} {
		if _, err := ParseCheckpoint(in, 0); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("ParseCheckpoint(%q): %v, want %q", in, err, why)
		}
	}
	if _, err := ParseCheckpoint("LATEST", 2); err == nil {
		t.Error("a sub-sequence number with a sentinel was accepted")
	}
}

func TestReadPositions(t *testing.T) {
	p := func(key, cp string, sub int64) Position {
		return Position{LeaseKey: key, Checkpoint: leasecore.SequenceNumber{SequenceNumber: cp, SubSequenceNumber: sub}}
	}
	for name, tc := range map[string]struct {
		in   string
		want []Position
	}{
		"bare":      {"shardId-1,4959,2\nshardId-2,TRIM_HORIZON\n", []Position{p("shardId-1", "4959", 2), p("shardId-2", "TRIM_HORIZON", 0)}},
		"header":    {"leaseKey,checkpoint,subSequenceNumber\nshardId-1,4959,0\n", []Position{p("shardId-1", "4959", 0)}},
		"reordered": {"checkpoint,leaseKey\nSHARD_END,shardId-1\n", []Position{p("shardId-1", "SHARD_END", 0)}},
		"leases ls": {"leaseKey,shardId,leaseOwner,leaseCounter,checkpoint,checkpointSubSequenceNumber,ownerSwitchesSinceCheckpoint,parentShardId,childShardIds,checkpointOwner,throughputKBps,startingHashKey,endingHashKey,streamName,state\nshardId-1,shardId-1,w,7,4959,3,0,,,,,0,1,,owned\n", []Position{p("shardId-1", "4959", 3)}},
		"export csv": {"leaseKey,checkpoint,subSequenceNumber,kind,item\nLeader,,,non-lease,\"{\"\"leaseKey\"\":{\"\"S\"\":\"\"Leader\"\"},\"\"entityType\"\":{\"\"S\"\":\"\"LEADER\"\"}}\"\n" +
			"shardId-1,4959,1,lease,\"{\"\"leaseKey\"\":{\"\"S\"\":\"\"shardId-1\"\"},\"\"leaseCounter\"\":{\"\"N\"\":\"\"1\"\"},\"\"checkpoint\"\":{\"\"S\"\":\"\"4959\"\"},\"\"checkpointSubSequenceNumber\"\":{\"\"N\"\":\"\"1\"\"},\"\"ownerSwitchesSinceCheckpoint\"\":{\"\"N\"\":\"\"0\"\"}}\"\n", []Position{p("shardId-1", "4959", 1)}},
		"bom, blank": {"\xef\xbb\xbfshardId-1,LATEST,0\n\n", []Position{p("shardId-1", "LATEST", 0)}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := ReadPositions([]byte(tc.in), "f.csv")
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("got %v, want %v", got[i], tc.want[i])
				}
			}
		})
	}
	for in, why := range map[string]string{
		"shardId-1,49x,0\n":              "f.csv: 1 entry cannot be used, so nothing was written: line 1 (shardId-1): checkpoint \"49x\"",
		"shardId-1,4959,-1\n":            "line 1 (shardId-1): subSequenceNumber \"-1\"",
		"a,LATEST\nb,LATEST\na,LATEST\n": "line 3 (a): already given on line 1",
		"leaseKey,owner\nx,y\n":          "f.csv line 1: the header names leaseKey but no checkpoint column",
		"":                               "f.csv holds no positions",
		",LATEST\n":                      "line 1 (leaseKey unknown): no leaseKey",
		`{"format":"something-else"}`:    "not a kcltool export",
		"shardId-1\n":                    "line 1 (shardId-1): no checkpoint",
		"a,\"unterminated\n":             "f.csv",
	} {
		_, err := ReadPositions([]byte(in), "f.csv")
		if err == nil || !strings.Contains(err.Error(), why) || !IsInputError(err) {
			t.Errorf("ReadPositions(%q): %v, want an input error with %q", in, err, why)
		}
	}
}
