package emulator

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// TestEFOProxySubscribes: through the proxy the SDK's SubscribeToShard
// reads kinesis-local's events (directly it fails on the missing
// initial-response event).
func TestEFOProxySubscribes(t *testing.T) {
	ctx := context.Background()
	kin := KinesisEFO(t)
	stream := Name(t, "s")
	CreateStream(t, kin, stream, 1)
	sum, err := kin.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(stream)})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := kin.RegisterStreamConsumer(ctx, &kinesis.RegisterStreamConsumerInput{StreamARN: sum.StreamDescriptionSummary.StreamARN, ConsumerName: aws.String("c")})
	if err != nil {
		t.Fatal(err)
	}
	for {
		d, err := kin.DescribeStreamConsumer(ctx, &kinesis.DescribeStreamConsumerInput{ConsumerARN: reg.Consumer.ConsumerARN})
		if err != nil {
			t.Fatal(err)
		}
		if d.ConsumerDescription.ConsumerStatus == types.ConsumerStatusActive {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := kin.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String(stream), PartitionKey: aws.String("k"), Data: []byte("hello")}); err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := kin.SubscribeToShard(sctx, &kinesis.SubscribeToShardInput{ConsumerARN: reg.Consumer.ConsumerARN, ShardId: aws.String("shardId-000000000000"),
		StartingPosition: &types.StartingPosition{Type: types.ShardIteratorTypeTrimHorizon}})
	if err != nil {
		t.Fatal(err)
	}
	es := out.GetStream()
	defer es.Close()
	for ev := range es.Events() {
		e, ok := ev.(*types.SubscribeToShardEventStreamMemberSubscribeToShardEvent)
		if !ok {
			continue
		}
		if len(e.Value.Records) > 0 {
			if string(e.Value.Records[0].Data) != "hello" || e.Value.ContinuationSequenceNumber == nil {
				t.Fatalf("event %+v", e.Value)
			}
			return
		}
	}
	t.Fatalf("stream ended without the record: %v", es.Err())
}
