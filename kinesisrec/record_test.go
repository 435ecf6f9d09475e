package kinesisrec

import (
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
