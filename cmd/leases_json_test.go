package cmd

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// checkLeaseJSON fails unless appendJSON gives json.Marshal's bytes, or
// json.Marshal's error, for j. It appends after a prefix to catch a method
// that overwrites the buffer instead of appending to it.
func checkLeaseJSON(t *testing.T, name string, j leaseJSON) {
	t.Helper()
	want, wantErr := json.Marshal(j)
	const prefix = "prefix:"
	got, err := j.appendJSON([]byte(prefix))
	if wantErr != nil || err != nil {
		if wantErr == nil || err == nil || err.Error() != wantErr.Error() {
			t.Errorf("%s: appendJSON error %v, json.Marshal error %v", name, err, wantErr)
		}
		return
	}
	if !bytes.HasPrefix(got, []byte(prefix)) {
		t.Fatalf("%s: appendJSON dropped the buffer it was given: %q", name, got)
	}
	if got = got[len(prefix):]; !bytes.Equal(got, want) {
		t.Errorf("%s:\nappendJSON   %s\njson.Marshal %s", name, got, want)
	}
}

func i64(n int64) *int64     { return &n }
func f64(f float64) *float64 { return &f }
func leaseFull() leaseJSON   { return leaseJSONAll("shardId-000000000001") }
func leaseMinimal() leaseJSON {
	return leaseJSON{LeaseKey: "shardId-000000000000", State: "UNASSIGNED"}
}
func withLease(f func(*leaseJSON)) leaseJSON { j := leaseFull(); f(&j); return j }

// leaseJSONAll has every field set, so a swapped field or a wrong key name
// shows in the comparison.
func leaseJSONAll(key string) leaseJSON {
	return leaseJSON{
		LeaseKey: key, LeaseOwner: "worker-1", LeaseCounter: 42, OwnerSwitchesSinceCheckpoint: 3,
		Checkpoint: "49590338271490256608559692538361571095921575989136588898", CheckpointSubSequenceNumber: 7,
		PendingCheckpoint: "49590338271490256608559692538361571095921575989136588899", PendingCheckpointSubSequenceNumber: i64(8),
		PendingCheckpointState: "c3RhdGU=", ParentShardID: []string{"shardId-000000000000"},
		ChildShardIDs:   []string{"shardId-000000000002", "shardId-000000000003"},
		StartingHashKey: "0", EndingHashKey: "340282366920938463463374607431768211455",
		ThroughputKBps: f64(12.5), CheckpointOwner: "worker-2", EntityType: "LEASE", StreamName: "orders",
		ShardID: "shardId-000000000001", State: "WAITING_ON_PARENT", BlockedBy: []string{"shardId-000000000000"},
		RenewalsSeen: i64(5),
	}
}

func TestLeaseJSONAppendTable(t *testing.T) {
	cases := []struct {
		name string
		j    leaseJSON
	}{
		{"zero value", leaseJSON{}},
		{"minimal", leaseMinimal()},
		{"every field", leaseFull()},
		{"owner only", leaseJSON{LeaseKey: "k", LeaseOwner: "w", State: "OWNED"}},
		{"pending checkpoint only", leaseJSON{LeaseKey: "k", PendingCheckpoint: "1", State: "s"}},
		{"pending subseq zero", leaseJSON{LeaseKey: "k", PendingCheckpointSubSequenceNumber: i64(0)}},
		{"pending state only", leaseJSON{LeaseKey: "k", PendingCheckpointState: "AA=="}},
		{"parents only", leaseJSON{LeaseKey: "k", ParentShardID: []string{"a", "b"}}},
		{"children only", leaseJSON{LeaseKey: "k", ChildShardIDs: []string{"c"}}},
		{"hash keys only", leaseJSON{LeaseKey: "k", StartingHashKey: "1", EndingHashKey: "2"}},
		{"ending hash key only", leaseJSON{LeaseKey: "k", EndingHashKey: "2"}},
		{"checkpoint owner only", leaseJSON{LeaseKey: "k", CheckpointOwner: "w2"}},
		{"entity type only", leaseJSON{LeaseKey: "k", EntityType: "LEASE"}},
		{"stream only", leaseJSON{LeaseKey: "k", StreamName: "s"}},
		{"shard id only", leaseJSON{LeaseKey: "k", ShardID: "shardId-1"}},
		{"blocked by only", leaseJSON{LeaseKey: "k", BlockedBy: []string{"p1", "p2"}}},
		{"renewals zero", leaseJSON{LeaseKey: "k", RenewalsSeen: i64(0)}},
		{"throughput only", leaseJSON{LeaseKey: "k", ThroughputKBps: f64(3)}},

		{"nil slices", withLease(func(j *leaseJSON) { j.ParentShardID, j.ChildShardIDs, j.BlockedBy = nil, nil, nil })},
		{"empty slices", withLease(func(j *leaseJSON) { j.ParentShardID, j.ChildShardIDs, j.BlockedBy = []string{}, []string{}, []string{} })},
		{"slice of empty strings", withLease(func(j *leaseJSON) { j.ParentShardID = []string{"", ""} })},
		{"nil pointers", withLease(func(j *leaseJSON) {
			j.PendingCheckpointSubSequenceNumber, j.ThroughputKBps, j.RenewalsSeen = nil, nil, nil
		})},
		{"empty strings", withLease(func(j *leaseJSON) {
			j.LeaseOwner, j.Checkpoint, j.PendingCheckpoint, j.PendingCheckpointState = "", "", "", ""
			j.StartingHashKey, j.EndingHashKey, j.CheckpointOwner, j.EntityType, j.StreamName, j.ShardID, j.State = "", "", "", "", "", "", ""
		})},

		{"html characters", withLease(func(j *leaseJSON) { j.LeaseKey, j.LeaseOwner = "a<b>&c", "<script>&amp;" })},
		{"lone <", withLease(func(j *leaseJSON) { j.LeaseOwner = "a<b" })},
		{"lone >", withLease(func(j *leaseJSON) { j.StreamName = "a>b" })},
		{"lone &", withLease(func(j *leaseJSON) { j.State = "a&b" })},
		{"quote", withLease(func(j *leaseJSON) { j.LeaseOwner = `say "hi"` })},
		{"backslash", withLease(func(j *leaseJSON) { j.StreamName = `C:\streams\x` })},
		{"control characters", withLease(func(j *leaseJSON) { j.LeaseOwner = "a\x00b\tc\nd\re\x1ff\bh\fi" })},
		{"lone newline", withLease(func(j *leaseJSON) { j.Checkpoint = "1\n" })},
		{"DEL", withLease(func(j *leaseJSON) { j.LeaseOwner = "a\x7fb" })},
		{"line separators", withLease(func(j *leaseJSON) { j.CheckpointOwner = "a\u2028b\u2029c" })},
		{"invalid utf-8", withLease(func(j *leaseJSON) { j.LeaseOwner, j.ShardID = "a\xffb\xc3", "\xed\xa0\x80" })},
		{"non-ascii", withLease(func(j *leaseJSON) { j.LeaseOwner, j.StreamName = "wörker-ñ", "流-🚀" })},
		{"special in slices", withLease(func(j *leaseJSON) {
			j.ParentShardID, j.ChildShardIDs, j.BlockedBy = []string{"<a>", `"q"`}, []string{"\u2028", "\xff"}, []string{`\`, "é"}
		})},
		{"space and tilde", withLease(func(j *leaseJSON) { j.LeaseOwner = " ~!#$%'()*+,-./:;=?@[]^_`{|}" })},

		{"negative ints", withLease(func(j *leaseJSON) {
			j.LeaseCounter, j.OwnerSwitchesSinceCheckpoint, j.CheckpointSubSequenceNumber = -1, -42, -7
			j.PendingCheckpointSubSequenceNumber, j.RenewalsSeen = i64(-9), i64(-3)
		})},
		{"large ints", withLease(func(j *leaseJSON) {
			j.LeaseCounter, j.OwnerSwitchesSinceCheckpoint, j.CheckpointSubSequenceNumber = math.MaxInt64, math.MinInt64, 1<<53+1
			j.PendingCheckpointSubSequenceNumber, j.RenewalsSeen = i64(math.MinInt64), i64(math.MaxInt64)
		})},

		{"throughput 0", withLease(func(j *leaseJSON) { j.ThroughputKBps = f64(0) })},
		{"throughput -0", withLease(func(j *leaseJSON) { j.ThroughputKBps = f64(math.Copysign(0, -1)) })},
		{"throughput 1.5", withLease(func(j *leaseJSON) { j.ThroughputKBps = f64(1.5) })},
		{"throughput 1e21", withLease(func(j *leaseJSON) { j.ThroughputKBps = f64(1e21) })},
		{"throughput 1e20", withLease(func(j *leaseJSON) { j.ThroughputKBps = f64(1e20) })},
		{"throughput 1e-7", withLease(func(j *leaseJSON) { j.ThroughputKBps = f64(1e-7) })},
		{"throughput 1e-6", withLease(func(j *leaseJSON) { j.ThroughputKBps = f64(1e-6) })},
		{"throughput 123456789.125", withLease(func(j *leaseJSON) { j.ThroughputKBps = f64(123456789.125) })},
		{"throughput negative", withLease(func(j *leaseJSON) { j.ThroughputKBps = f64(-2.75e-9) })},
		{"throughput max", withLease(func(j *leaseJSON) { j.ThroughputKBps = f64(math.MaxFloat64) })},
		{"throughput smallest", withLease(func(j *leaseJSON) { j.ThroughputKBps = f64(math.SmallestNonzeroFloat64) })},
		{"throughput NaN", withLease(func(j *leaseJSON) { j.ThroughputKBps = f64(math.NaN()) })},
		{"throughput +Inf", withLease(func(j *leaseJSON) { j.ThroughputKBps = f64(math.Inf(1)) })},
	}
	for _, c := range cases {
		checkLeaseJSON(t, c.name, c.j)
	}
	// Each byte alone between plain ones, so the copy-or-escape decision is
	// checked for all 256 and not hidden by a neighbour that escapes anyway.
	for c := range 256 {
		s := "a" + string([]byte{byte(c)}) + "b"
		checkLeaseJSON(t, "byte "+strconv.Itoa(c), withLease(func(j *leaseJSON) { j.LeaseOwner, j.BlockedBy = optString(s), []string{s} }))
	}
}

func TestLeaseJSONAppendRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"", "a", "Z", "0", "9", " ", "~", "-", "_", "shardId-000000000001", "worker-1",
		"<", ">", "&", `"`, `\`, "/", "\x00", "\t", "\n", "\x1f", "\x7f", "é", "ñ", "流", "🚀",
		"\u2028", "\u2029", "\ufffd", "\xff", "\xc3", "\xed\xa0\x80", "\xf4\x90\x80\x80"}
	str := func() string {
		if r.IntN(4) == 0 {
			return ""
		}
		if r.IntN(2) == 0 { // mostly the plain ASCII the fast path copies
			b := make([]byte, r.IntN(60))
			for i := range b {
				b[i] = byte(0x20 + r.IntN(0x5f))
			}
			return string(b)
		}
		var sb strings.Builder
		for range r.IntN(6) {
			sb.WriteString(pieces[r.IntN(len(pieces))])
		}
		return sb.String()
	}
	strs := func() []string {
		switch r.IntN(4) {
		case 0:
			return nil
		case 1:
			return []string{}
		}
		s := make([]string, 1+r.IntN(3))
		for i := range s {
			s[i] = str()
		}
		return s
	}
	num := func() int64 {
		switch r.IntN(4) {
		case 0:
			return 0
		case 1:
			return r.Int64N(1000) - 500
		case 2:
			return -r.Int64()
		}
		return r.Int64()
	}
	optNum := func() *int64 {
		if r.IntN(3) == 0 {
			return nil
		}
		return i64(num())
	}
	optFloat := func() *float64 {
		switch r.IntN(5) {
		case 0:
			return nil
		case 1:
			return f64(float64(r.IntN(100000)) / 8)
		case 2:
			return f64(math.Float64frombits(r.Uint64())) // any bit pattern, NaN and Inf included
		}
		return f64((r.Float64() - 0.5) * math.Pow(10, float64(r.IntN(60)-30)))
	}
	for i := range 5000 {
		j := leaseJSON{
			LeaseKey: str(), LeaseOwner: optString(str()), LeaseCounter: num(), OwnerSwitchesSinceCheckpoint: num(),
			Checkpoint: str(), CheckpointSubSequenceNumber: num(), PendingCheckpoint: optString(str()),
			PendingCheckpointSubSequenceNumber: optNum(), PendingCheckpointState: optString(str()),
			ParentShardID: strs(), ChildShardIDs: strs(), StartingHashKey: optString(str()), EndingHashKey: optString(str()),
			ThroughputKBps: optFloat(), CheckpointOwner: optString(str()), EntityType: optString(str()), StreamName: optString(str()),
			ShardID: optString(str()), State: str(), BlockedBy: strs(), RenewalsSeen: optNum(),
		}
		checkLeaseJSON(t, "random #"+itoa(int64(i)), j)
		if t.Failed() {
			break
		}
	}
}

// TestLeaseJSONLines checks the array around the objects: writeJSONLines
// must give the same document whether items append themselves or not.
func TestLeaseJSONLines(t *testing.T) {
	leases := []leaseJSON{leaseFull(), leaseMinimal(), withLease(func(j *leaseJSON) { j.LeaseOwner = "<é>\u2028" }), leaseMinimal()}
	var want bytes.Buffer
	want.WriteString("[\n")
	for i, l := range leases {
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		want.WriteString("  ")
		want.Write(b)
		if i < len(leases)-1 {
			want.WriteByte(',')
		}
		want.WriteByte('\n')
	}
	want.WriteString("]\n")
	var got bytes.Buffer
	if err := writeJSONLines(&got, leases); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Errorf("writeJSONLines:\n%s\nwant:\n%s", got.String(), want.String())
	}

	// A type without appendJSON still goes through json.Marshal.
	type plain struct {
		Key string `json:"key"`
	}
	got.Reset()
	if err := writeJSONLines(&got, []plain{{"a<"}, {"b"}}); err != nil {
		t.Fatal(err)
	}
	if w := "[\n  {\"key\":\"a\\u003c\"},\n  {\"key\":\"b\"}\n]\n"; got.String() != w {
		t.Errorf("writeJSONLines of a plain type = %q, want %q", got.String(), w)
	}

	// A value json.Marshal refuses is an error, not a line of bad JSON.
	bad := []leaseJSON{leaseMinimal(), withLease(func(j *leaseJSON) { j.ThroughputKBps = f64(math.NaN()) })}
	if err := writeJSONLines(&got, bad); err == nil {
		t.Error("writeJSONLines of a NaN throughput: no error")
	}
}
