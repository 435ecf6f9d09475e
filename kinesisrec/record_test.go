package kinesisrec

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/leasecore"
)

func TestFromKinesis(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	got := FromKinesis("shardId-7", []types.Record{
		{Data: []byte("x"), SequenceNumber: aws.String("11"), PartitionKey: aws.String("pk"), ApproximateArrivalTimestamp: &at},
		{Data: []byte("y"), SequenceNumber: aws.String("12")}, // AUTO distribution: no partition key
	})
	assertRecords(t, got, []Record{
		{Data: []byte("x"), SequenceNumber: "11", PartitionKey: "pk", ApproximateArrivalTimestamp: at, ShardID: "shardId-7"},
		{Data: []byte("y"), SequenceNumber: "12", ShardID: "shardId-7"},
	})
}

func TestAfterCheckpoint(t *testing.T) {
	rec := func(seq string, sub int64) Record {
		return Record{SequenceNumber: seq, SubSequenceNumber: sub, Data: []byte("plain")}
	}
	in := []Record{rec("99", 0), rec("100", 0), rec("100", 1), rec("100", 2), rec("101", 0)}
	cp := func(seq string, sub int64) leasecore.SequenceNumber {
		return leasecore.SequenceNumber{SequenceNumber: seq, SubSequenceNumber: sub}
	}
	cases := []struct {
		name string
		cp   leasecore.SequenceNumber
		want string
	}{
		// "99" < "100" as numbers though not as text.
		{"mid-aggregate", cp("100", 1), "100.2 101.0"},
		{"whole aggregate", cp("100", 2), "101.0"},
		{"plain record", cp("99", 0), "100.0 100.1 100.2 101.0"},
		{"before everything", cp("98", 5), "99.0 100.0 100.1 100.2 101.0"},
		{"after everything", cp("101", 0), ""},
		{"leading zeros", cp("0100", 0), "100.1 100.2 101.0"},
		{leasecore.TRIM_HORIZON, cp(leasecore.TRIM_HORIZON, 0), "99.0 100.0 100.1 100.2 101.0"},
		{leasecore.LATEST, cp(leasecore.LATEST, 0), "99.0 100.0 100.1 100.2 101.0"},
		{leasecore.AT_TIMESTAMP, cp(leasecore.AT_TIMESTAMP, 0), "99.0 100.0 100.1 100.2 101.0"},
		{leasecore.SHARD_END, cp(leasecore.SHARD_END, 0), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := summary(AfterCheckpoint(in, c.cp)); got != c.want {
				t.Errorf("AfterCheckpoint(%v) = %q, want %q", c.cp, got, c.want)
			}
		})
	}
	if out := AfterCheckpoint(in, cp("1", 0)); &out[0] != &in[0] {
		t.Error("nothing dropped, yet the slice was copied")
	}
}

// A record kept encoded gives its data back decoded, its length, and its
// text as Wire64; data that may be a KPL aggregate is never kept encoded,
// so that Deaggregate sees every aggregate.
func TestSetEncoded(t *testing.T) {
	data := []byte("hello, kinesis")
	text := base64.StdEncoding.EncodeToString(data)
	var r Record
	if !r.SetEncoded(text, len(data)) {
		t.Fatal("SetEncoded refused plain data")
	}
	if r.Data != nil || r.DataLen() != len(data) || string(r.Payload()) != string(data) || r.Wire64() != text {
		t.Fatalf("encoded record: Data %q, DataLen %d, Payload %q, Wire64 %q", r.Data, r.DataLen(), r.Payload(), r.Wire64())
	}
	agg := append(append([]byte(nil), kplMagic...), "rest"...)
	var a Record
	if a.SetEncoded(base64.StdEncoding.EncodeToString(agg), len(agg)) {
		t.Fatal("SetEncoded kept data that may be a KPL aggregate encoded")
	}
	if !strings.HasPrefix(base64.StdEncoding.EncodeToString(kplMagic), kplMagic64) {
		t.Fatalf("kplMagic64 %q is not how kplMagic encodes", kplMagic64)
	}
	var e Record
	if e.SetEncoded("", 0) {
		t.Fatal("SetEncoded kept empty data encoded (empty data is an empty Data)")
	}
}
