package kinesisrec

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// Aggregates go through kinesis-local and come back through GetRecords as
// the fetch loop will see them: with real sequence numbers, arrival times
// and the shard's real hash range, and restarted from a checkpoint in the
// middle of an aggregate with AT_SEQUENCE_NUMBER, as KCL restarts.
func TestDeaggregateThroughKinesis(t *testing.T) {
	ctx := context.Background()
	kin := emulator.Kinesis(t)
	stream := emulator.Name(t, "agg")
	emulator.CreateStream(t, kin, stream, 2)
	shards, err := kin.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String(stream)})
	if err != nil {
		t.Fatal(err)
	}
	shard := shards.Shards[0]
	hr := mustRange(t, *shard.HashKeyRange.StartingHashKey, *shard.HashKeyRange.EndingHashKey)
	// md5("a") lies in the lower half of the key space, md5("b") in the
	// upper; kinesis-local ends shard 0 a hair before 2^127-1, which does
	// not matter here.
	if !hr.Contains(partitionKeyHash("a")) || hr.Contains(partitionKeyHash("b")) {
		t.Fatalf("shard 0 of a 2-shard stream covers %s", hr)
	}
	npm := loadNPMAggregates(t).Aggregates[0] // one record, partition key "alpha" (lower half)

	put := func(data []byte) string {
		t.Helper()
		// The explicit hash key routes every record to shard 0, whatever
		// its sub-records' keys: that is how an aggregate ends up in a shard
		// that does not own all of its keys.
		out, err := kin.PutRecord(ctx, &kinesis.PutRecordInput{
			StreamName: aws.String(stream), Data: data,
			PartitionKey: aws.String("outer"), ExplicitHashKey: aws.String("0"),
		})
		if err != nil {
			t.Fatal(err)
		}
		if *out.ShardId != *shard.ShardId {
			t.Fatalf("record went to %s, want %s", *out.ShardId, *shard.ShardId)
		}
		return *out.SequenceNumber
	}
	seqA := put(aggregate(
		userRecord{PartitionKey: "a", Data: []byte("a1")},
		userRecord{PartitionKey: "a", ExplicitHashKey: "5", Data: []byte("a2")},
		userRecord{PartitionKey: "a", Data: []byte("a3")},
	))
	seqM := put(aggregate(userRecord{PartitionKey: "a", Data: []byte("m1")}, userRecord{PartitionKey: "b", Data: []byte("m2")}))
	seqP := put([]byte("plain"))
	seqN := put(npm.Data)

	read := func(it *kinesis.GetShardIteratorInput) []Record {
		t.Helper()
		it.StreamName, it.ShardId = aws.String(stream), shard.ShardId
		iter, err := kin.GetShardIterator(ctx, it)
		if err != nil {
			t.Fatal(err)
		}
		out, err := kin.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: iter.ShardIterator})
		if err != nil {
			t.Fatal(err)
		}
		recs, rep := Deaggregate(FromKinesis(*shard.ShardId, out.Records), hr)
		if rep.OutOfRange != 1 {
			t.Errorf("report = %+v, want the mixed aggregate out of range", rep)
		}
		for i, r := range recs {
			src := out.Records[0]
			for _, k := range out.Records {
				if *k.SequenceNumber == r.SequenceNumber {
					src = k
				}
			}
			if r.ApproximateArrivalTimestamp.IsZero() || !r.ApproximateArrivalTimestamp.Equal(*src.ApproximateArrivalTimestamp) {
				t.Errorf("record %d: arrival %v, its Kinesis record's %v", i, r.ApproximateArrivalTimestamp, src.ApproximateArrivalTimestamp)
			}
			if r.ShardID != *shard.ShardId {
				t.Errorf("record %d: shard %q", i, r.ShardID)
			}
		}
		return recs
	}

	got := read(&kinesis.GetShardIteratorInput{ShardIteratorType: types.ShardIteratorTypeTrimHorizon})
	want := []struct {
		seq     string
		sub     int64
		pk, ehk string
		data    string
	}{
		{seqA, 0, "a", "", "a1"}, {seqA, 1, "a", "5", "a2"}, {seqA, 2, "a", "", "a3"},
		{seqP, 0, "outer", "", "plain"},
		{seqN, 0, npm.Records[0].PartitionKey, "", string(npm.Records[0].Data)},
	}
	check := func(got []Record, from int) {
		t.Helper()
		if len(got) != len(want)-from {
			t.Fatalf("got %d records, want %d: %s", len(got), len(want)-from, summary(got))
		}
		for i, w := range want[from:] {
			g := got[i]
			if g.SequenceNumber != w.seq || g.SubSequenceNumber != w.sub || g.PartitionKey != w.pk || g.ExplicitHashKey != w.ehk || string(g.Data) != w.data {
				t.Errorf("record %d = %s.%d pk=%q ehk=%q %q, want %+v", i, g.SequenceNumber, g.SubSequenceNumber, g.PartitionKey, g.ExplicitHashKey, g.Data, w)
			}
		}
	}
	check(got, 0)
	if seqM == seqA || seqM == seqP {
		t.Fatal("sequence numbers repeat")
	}

	// A worker that checkpointed (seqA, 1) restarts AT_SEQUENCE_NUMBER seqA
	// and must hand out (seqA, 2) next, and nothing before it.
	cp := leasecore.SequenceNumber{SequenceNumber: seqA, SubSequenceNumber: 1}
	got = read(&kinesis.GetShardIteratorInput{ShardIteratorType: types.ShardIteratorTypeAtSequenceNumber, StartingSequenceNumber: aws.String(seqA)})
	check(AfterCheckpoint(got, cp), 2)
}
