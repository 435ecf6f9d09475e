package kinesisrec

import (
	"bytes"
	"crypto/md5"
	"fmt"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/kcltool/kcltool/leasecore"
)

var arrival = time.Date(2025, 3, 4, 5, 6, 7, 891e6, time.UTC)

// kinesisRecord is a record as GetRecords returns it, before de-aggregation.
func kinesisRecord(seq string, data []byte) Record {
	return Record{Data: data, PartitionKey: "outer", SequenceNumber: seq, ApproximateArrivalTimestamp: arrival, ShardID: "shardId-000000000001"}
}

func mustRange(t *testing.T, start, end string) leasecore.HashRange {
	t.Helper()
	hr, err := leasecore.NewHashRange(start, end)
	if err != nil {
		t.Fatal(err)
	}
	return hr
}

// Hash keys of the partition keys used below, from MD5 by hand:
// md5("a") = 0cc175b9…, in the lower half of the key space;
// md5("b") = 92eb5ffe…, in the upper half.
const (
	lowerHalfEnd   = "170141183460469231731687303715884105727" // 2^127-1
	upperHalfStart = "170141183460469231731687303715884105728" // 2^127
	topHashKey     = "340282366920938463463374607431768211455" // 2^128-1
)

func TestDeaggregateSubRecords(t *testing.T) {
	blob := aggregate(
		userRecord{PartitionKey: "a", Data: []byte("one")},
		userRecord{PartitionKey: "b", ExplicitHashKey: "42", Data: []byte("two")},
		userRecord{PartitionKey: "a", Data: []byte{}},
		userRecord{PartitionKey: "c", Data: []byte("four")},
	)
	in := []Record{kinesisRecord("49590338271490256608559692538361571095921575989136588898", blob)}
	got, rep := Deaggregate(in, leasecore.HashRange{})
	seq := in[0].SequenceNumber
	want := []Record{
		{Data: []byte("one"), PartitionKey: "a", SequenceNumber: seq, SubSequenceNumber: 0, ApproximateArrivalTimestamp: arrival, ShardID: "shardId-000000000001"},
		{Data: []byte("two"), PartitionKey: "b", SequenceNumber: seq, SubSequenceNumber: 1, ApproximateArrivalTimestamp: arrival, ShardID: "shardId-000000000001", ExplicitHashKey: "42"},
		{Data: []byte{}, PartitionKey: "a", SequenceNumber: seq, SubSequenceNumber: 2, ApproximateArrivalTimestamp: arrival, ShardID: "shardId-000000000001"},
		{Data: []byte("four"), PartitionKey: "c", SequenceNumber: seq, SubSequenceNumber: 3, ApproximateArrivalTimestamp: arrival, ShardID: "shardId-000000000001"},
	}
	assertRecords(t, got, want)
	if rep.Aggregates != 1 || rep.OutOfRange != 0 || len(rep.Broken) != 0 {
		t.Errorf("report = %+v", rep)
	}
}

func TestDeaggregatePassThrough(t *testing.T) {
	valid := aggregate(userRecord{PartitionKey: "a", Data: []byte("x")})
	badSum := bytes.Clone(valid)
	badSum[len(badSum)-1] ^= 1
	// A protobuf cut short, with a checksum that matches it: it passes the
	// MD5 check and fails to parse.
	body := aggregateProto([]userRecord{{PartitionKey: "a", Data: []byte("hello")}})
	truncated := frame(body[:len(body)-2])
	// A sub-record without its required data field.
	var noData []byte
	noData = protowire.AppendTag(noData, aggPartitionKeyTable, protowire.BytesType)
	noData = protowire.AppendString(noData, "a")
	var sub []byte
	sub = protowire.AppendTag(sub, recPartitionKeyIndex, protowire.VarintType)
	sub = protowire.AppendVarint(sub, 0)
	noData = protowire.AppendTag(noData, aggRecords, protowire.BytesType)
	noData = protowire.AppendBytes(noData, sub)
	// A tag without its required key.
	var tagNoKey []byte
	tagNoKey = protowire.AppendTag(tagNoKey, aggPartitionKeyTable, protowire.BytesType)
	tagNoKey = protowire.AppendString(tagNoKey, "a")
	sub = nil
	sub = protowire.AppendTag(sub, recPartitionKeyIndex, protowire.VarintType)
	sub = protowire.AppendVarint(sub, 0)
	sub = protowire.AppendTag(sub, recData, protowire.BytesType)
	sub = protowire.AppendBytes(sub, []byte("d"))
	sub = protowire.AppendTag(sub, recTags, protowire.BytesType)
	sub = protowire.AppendBytes(sub, protowire.AppendString(protowire.AppendTag(nil, 2, protowire.BytesType), "value-only"))
	tagNoKey = protowire.AppendTag(tagNoKey, aggRecords, protowire.BytesType)
	tagNoKey = protowire.AppendBytes(tagNoKey, sub)

	cases := map[string][]byte{
		"plain text":                []byte("just some data"),
		"empty":                     {},
		"shorter than the magic":    kplMagic[:3],
		"magic only":                kplMagic,
		"magic and 16 bytes":        append(bytes.Clone(kplMagic), make([]byte, 16)...),
		"empty protobuf":            frame(nil), // 16 bytes after the magic: KCL needs more
		"wrong magic":               append([]byte{0xF3, 0x89, 0x9A, 0xC3}, valid[4:]...),
		"corrupted MD5":             badSum,
		"corrupted body":            append(append(bytes.Clone(valid[:6]), valid[6]^0xff), valid[7:]...),
		"truncated blob":            valid[:len(valid)-3],
		"truncated protobuf":        truncated,
		"missing required data":     frame(noData),
		"tag missing required key":  frame(tagNoKey),
		"end-group tag at top":      frame(protowire.AppendTag(bytes.Clone(body), 9, protowire.EndGroupType)),
		"field number zero":         frame(append([]byte{0x02, 0x00}, body...)),
		"varint longer than 10":     frame(append(bytes.Clone(body), 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01)),
		"length beyond the message": frame(append(bytes.Clone(body), 0x0a, 0x7f, 'x')),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			in := []Record{kinesisRecord("7", data)}
			got, rep := Deaggregate(in, leasecore.HashRange{})
			assertRecords(t, got, in)
			if got[0].SubSequenceNumber != 0 || rep.Aggregates != 0 {
				t.Errorf("sub = %d, report = %+v", got[0].SubSequenceNumber, rep)
			}
		})
	}
}

func TestDeaggregateNoAggregatesReturnsInput(t *testing.T) {
	in := []Record{kinesisRecord("1", []byte("a")), kinesisRecord("2", []byte("b"))}
	got, _ := Deaggregate(in, leasecore.HashRange{})
	if &got[0] != &in[0] || len(got) != 2 {
		t.Fatal("a batch without aggregates should come back as is, not copied")
	}
}

// Java's generated proto2 parser skips fields it does not know and fields
// whose wire type does not match, and keeps the last value of a repeated
// scalar; all of that still de-aggregates.
func TestDeaggregateToleratesWhatJavaTolerates(t *testing.T) {
	var msg []byte
	msg = protowire.AppendTag(msg, 15, protowire.VarintType) // unknown field
	msg = protowire.AppendVarint(msg, 99)
	msg = protowire.AppendTag(msg, aggPartitionKeyTable, protowire.BytesType)
	msg = protowire.AppendString(msg, "a")
	msg = protowire.AppendTag(msg, aggPartitionKeyTable, protowire.VarintType) // wrong wire type: unknown
	msg = protowire.AppendVarint(msg, 5)
	msg = protowire.AppendTag(msg, 16, protowire.StartGroupType) // unknown group
	msg = protowire.AppendTag(msg, 1, protowire.Fixed32Type)
	msg = protowire.AppendFixed32(msg, 1)
	msg = protowire.AppendTag(msg, 16, protowire.EndGroupType)
	msg = protowire.AppendTag(msg, aggPartitionKeyTable, protowire.BytesType)
	msg = protowire.AppendString(msg, "b")
	var sub []byte
	sub = protowire.AppendTag(sub, recPartitionKeyIndex, protowire.VarintType)
	sub = protowire.AppendVarint(sub, 0)
	sub = protowire.AppendTag(sub, recData, protowire.BytesType)
	sub = protowire.AppendBytes(sub, []byte("first"))
	sub = protowire.AppendTag(sub, recPartitionKeyIndex, protowire.VarintType) // last one wins
	sub = protowire.AppendVarint(sub, 1)
	sub = protowire.AppendTag(sub, recTags, protowire.BytesType)
	sub = protowire.AppendBytes(sub, protowire.AppendString(protowire.AppendTag(nil, tagKey, protowire.BytesType), "k"))
	sub = protowire.AppendTag(sub, 9, protowire.Fixed64Type)
	sub = protowire.AppendFixed64(sub, 7)
	msg = protowire.AppendTag(msg, aggRecords, protowire.BytesType)
	msg = protowire.AppendBytes(msg, sub)

	got, rep := Deaggregate([]Record{kinesisRecord("5", frame(msg))}, leasecore.HashRange{})
	assertRecords(t, got, []Record{{Data: []byte("first"), PartitionKey: "b", SequenceNumber: "5", ApproximateArrivalTimestamp: arrival, ShardID: "shardId-000000000001"}})
	if rep.Aggregates != 1 {
		t.Errorf("report = %+v", rep)
	}
}

// An aggregate with a key table but no records yields nothing at all, as
// in KCL: it is an aggregate, so it is not passed through either.
func TestDeaggregateEmptyAggregate(t *testing.T) {
	msg := protowire.AppendString(protowire.AppendTag(nil, aggPartitionKeyTable, protowire.BytesType), "a")
	got, rep := Deaggregate([]Record{kinesisRecord("1", frame(msg)), kinesisRecord("2", []byte("plain"))}, leasecore.HashRange{})
	if len(got) != 1 || got[0].SequenceNumber != "2" || rep.Aggregates != 1 {
		t.Fatalf("got %d records (%+v), report %+v", len(got), got, rep)
	}
}

func TestDeaggregateHashRangeDropsWholeAggregate(t *testing.T) {
	lower := mustRange(t, "0", lowerHalfEnd)
	upper := mustRange(t, upperHalfStart, topHashKey)
	mixed := aggregate(
		userRecord{PartitionKey: "a", Data: []byte("a1")},
		userRecord{PartitionKey: "a", Data: []byte("a2")},
		userRecord{PartitionKey: "b", Data: []byte("b1")}, // upper half: sinks the whole aggregate in the lower shard
		userRecord{PartitionKey: "a", Data: []byte("a3")},
	)
	onlyA := aggregate(userRecord{PartitionKey: "a", Data: []byte("a4")}, userRecord{PartitionKey: "a", Data: []byte("a5")})
	in := []Record{
		kinesisRecord("10", []byte("plain before")),
		kinesisRecord("11", mixed),
		kinesisRecord("12", onlyA),
		kinesisRecord("13", []byte("plain after")), // not aggregated: never filtered
	}

	got, rep := Deaggregate(in, lower)
	if s := summary(got); s != "10.0 12.0=a4 12.1=a5 13.0" {
		t.Errorf("lower shard: %s", s)
	}
	if rep.Aggregates != 2 || rep.OutOfRange != 1 {
		t.Errorf("lower shard report = %+v", rep)
	}
	got, rep = Deaggregate(in, upper)
	if s := summary(got); s != "10.0 13.0" {
		t.Errorf("upper shard: %s", s)
	}
	if rep.OutOfRange != 2 {
		t.Errorf("upper shard report = %+v", rep)
	}
	got, _ = Deaggregate(in, leasecore.HashRange{})
	if s := summary(got); s != "10.0 11.0=a1 11.1=a2 11.2=b1 11.3=a3 12.0=a4 12.1=a5 13.0" {
		t.Errorf("whole key space: %s", s)
	}
}

func TestDeaggregateExplicitHashKeyBounds(t *testing.T) {
	hr := mustRange(t, "100", "200")
	cases := []struct {
		ehk  string
		kept bool
	}{
		{"100", true}, {"200", true}, {"150", true}, {"+150", true}, {"0150", true},
		{"99", false}, {"201", false}, {"-150", false},
	}
	for _, c := range cases {
		blob := aggregate(userRecord{PartitionKey: "b", ExplicitHashKey: c.ehk, Data: []byte("x")})
		got, _ := Deaggregate([]Record{kinesisRecord("1", blob)}, hr)
		if kept := len(got) == 1; kept != c.kept {
			t.Errorf("explicit hash key %s: kept = %v, want %v", c.ehk, kept, c.kept)
		}
	}
	// The whole key space stops at 2^128-1, as in KCL.
	over := new(big.Int).Lsh(big.NewInt(1), 128).String()
	got, _ := Deaggregate([]Record{kinesisRecord("1", aggregate(userRecord{PartitionKey: "a", ExplicitHashKey: over, Data: []byte("x")}))}, leasecore.HashRange{})
	if len(got) != 0 {
		t.Errorf("explicit hash key 2^128 kept in the whole key space")
	}
}

// A partition key's hash key is MD5 of its UTF-8 bytes as an unsigned
// integer; check against a key computed here rather than through the code.
func TestDeaggregatePartitionKeyHash(t *testing.T) {
	pk := "ünïcødé-key"
	sum := md5.Sum([]byte(pk))
	k := new(big.Int).SetBytes(sum[:])
	blob := aggregate(userRecord{PartitionKey: pk, Data: []byte("x")})
	for _, c := range []struct {
		start, end *big.Int
		kept       bool
	}{
		{k, k, true},
		{new(big.Int).Add(k, big.NewInt(1)), new(big.Int).Add(k, big.NewInt(5)), false},
		{new(big.Int).Sub(k, big.NewInt(5)), new(big.Int).Sub(k, big.NewInt(1)), false},
	} {
		got, _ := Deaggregate([]Record{kinesisRecord("1", blob)}, mustRange(t, c.start.String(), c.end.String()))
		if kept := len(got) == 1; kept != c.kept {
			t.Errorf("range %s..%s around %s: kept = %v", c.start, c.end, k, kept)
		}
	}
}

// Bad table indexes and unparsable explicit hash keys are not parse errors
// in KCL: it logs them, keeps the sub-records before, and drops the rest.
func TestDeaggregateBrokenTables(t *testing.T) {
	body := aggregateProto([]userRecord{
		{PartitionKey: "a", Data: []byte("ok")},
		{PartitionKey: "a", ExplicitHashKey: "not-a-number", Data: []byte("bad")},
		{PartitionKey: "a", Data: []byte("after")},
	})
	got, rep := Deaggregate([]Record{kinesisRecord("3", frame(body))}, leasecore.HashRange{})
	if s := summary(got); s != "3.0=ok" || len(rep.Broken) != 1 || !strings.Contains(rep.Broken[0].Error(), "not-a-number") {
		t.Errorf("got %s, report %+v", s, rep)
	}

	var msg []byte
	msg = protowire.AppendTag(msg, aggPartitionKeyTable, protowire.BytesType)
	msg = protowire.AppendString(msg, "a")
	for _, idx := range []uint64{0, 1<<32 + 0, 1} { // 2^32 wraps to 0 under Java's (int) cast
		var sub []byte
		sub = protowire.AppendTag(sub, recPartitionKeyIndex, protowire.VarintType)
		sub = protowire.AppendVarint(sub, idx)
		sub = protowire.AppendTag(sub, recData, protowire.BytesType)
		sub = protowire.AppendBytes(sub, fmt.Appendf(nil, "idx%d", idx))
		msg = protowire.AppendTag(msg, aggRecords, protowire.BytesType)
		msg = protowire.AppendBytes(msg, sub)
	}
	got, rep = Deaggregate([]Record{kinesisRecord("4", frame(msg))}, leasecore.HashRange{})
	if s := summary(got); s != "4.0=idx0 4.1=idx4294967296" || len(rep.Broken) != 1 {
		t.Errorf("got %s, report %+v", s, rep)
	}
}

// summary prints records as seq.sub=data (data only for sub-records of
// aggregates, which are the interesting ones).
func summary(rs []Record) string {
	var parts []string
	for _, r := range rs {
		s := fmt.Sprintf("%s.%d", r.SequenceNumber, r.SubSequenceNumber)
		if !strings.HasPrefix(string(r.Data), "plain") {
			s += "=" + string(r.Data)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func assertRecords(t *testing.T, got, want []Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d:\n got %+v\nwant %+v", len(got), len(want), got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if !bytes.Equal(g.Data, w.Data) {
			t.Errorf("record %d: data %q, want %q", i, g.Data, w.Data)
		}
		g.Data, w.Data = nil, nil
		if !reflect.DeepEqual(g, w) {
			t.Errorf("record %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}
