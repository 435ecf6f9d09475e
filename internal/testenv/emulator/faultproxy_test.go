package emulator

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/smithy-go"
)

func code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// NotFound with MatchShard fails one shard's reads, GetShardIterator and the
// GetRecords made with its iterators, and leaves the other shards alone.
func TestFaultProxyNotFoundForOneShard(t *testing.T) {
	kin := Kinesis(t)
	stream := Name(t, "s")
	CreateStream(t, kin, stream, 2)
	p := NewFaultProxy(t, KinesisEndpoint(t), NotFound, 0, "", 1)
	p.MatchShard("shardId-000000000001")
	c := kinesis.NewFromConfig(Config(), func(o *kinesis.Options) { o.BaseEndpoint = aws.String(p.URL) })
	ctx := context.Background()
	iter := func(shard string) (*string, error) {
		out, err := c.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String(stream), ShardId: aws.String(shard),
			ShardIteratorType: kintypes.ShardIteratorTypeTrimHorizon})
		if err != nil {
			return nil, err
		}
		return out.ShardIterator, nil
	}
	it0, err := iter("shardId-000000000000")
	if err != nil {
		t.Fatal(err)
	}
	it1, err := iter("shardId-000000000001") // rate 0: handed out, and remembered
	if err != nil {
		t.Fatal(err)
	}
	p.SetRate(1)
	if _, err := iter("shardId-000000000001"); code(err) != "ResourceNotFoundException" {
		t.Fatalf("GetShardIterator of the matched shard: %v, want ResourceNotFoundException", err)
	}
	if _, err := c.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: it1}); code(err) != "ResourceNotFoundException" {
		t.Fatalf("GetRecords with the matched shard's iterator: %v, want ResourceNotFoundException", err)
	}
	if _, err := c.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: it0}); err != nil {
		t.Fatalf("GetRecords of the other shard: %v", err)
	}
	if _, err := iter("shardId-000000000000"); err != nil {
		t.Fatalf("GetShardIterator of the other shard: %v", err)
	}
}

// LoseResponse applies the write and hangs up; Partition holds every
// request, even after Heal for those already held; Heal lets new ones pass.
func TestFaultProxyLostAnswersAndPartition(t *testing.T) {
	ddb := DynamoDB(t)
	table := Name(t, "t")
	CreateLeaseTable(t, ddb, table)
	p := NewFaultProxy(t, DynamoDBEndpoint(t), LoseResponse, 1, "PutItem", 1)
	c := dynamodb.NewFromConfig(Config(), func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(p.URL)
		o.RetryMaxAttempts = 1
	})
	ctx := context.Background()
	item := map[string]ddbtypes.AttributeValue{"leaseKey": &ddbtypes.AttributeValueMemberS{Value: "k"}}
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err == nil {
		t.Fatal("PutItem answered; want the answer lost")
	}
	got, err := ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: item, ConsistentRead: aws.Bool(true)})
	if err != nil || len(got.Item) == 0 {
		t.Fatalf("the write whose answer was lost was not applied: %v %v", got, err)
	}

	p.Partition()
	held := make(chan error, 1)
	go func() {
		hctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		_, err := c.GetItem(hctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: item})
		held <- err
	}()
	for p.Held.Load() == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	p.Heal()
	if _, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: item}); err != nil {
		t.Fatalf("GetItem after the heal: %v", err)
	}
	select {
	case err := <-held:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("request held in the partition ended with %v, want its own deadline", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the held request never ended")
	}
}

// TrimmedPosition refuses a GetShardIterator at or after a sequence number
// of the matched shard with InvalidArgumentException naming it, and lets
// TRIM_HORIZON, the other shards and GetRecords through.
func TestFaultProxyTrimmedPosition(t *testing.T) {
	kin := Kinesis(t)
	stream := Name(t, "s")
	CreateStream(t, kin, stream, 2)
	ctx := context.Background()
	put, err := kin.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String(stream), Data: []byte("x"),
		PartitionKey: aws.String("k"), ExplicitHashKey: aws.String("0")})
	if err != nil {
		t.Fatal(err)
	}
	seq := aws.ToString(put.SequenceNumber)
	p := NewFaultProxy(t, KinesisEndpoint(t), TrimmedPosition, 1, "", 1)
	p.MatchShard(aws.ToString(put.ShardId))
	c := kinesis.NewFromConfig(Config(), func(o *kinesis.Options) { o.BaseEndpoint = aws.String(p.URL) })
	iter := func(typ kintypes.ShardIteratorType, seq *string) (*string, error) {
		out, err := c.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String(stream), ShardId: put.ShardId,
			ShardIteratorType: typ, StartingSequenceNumber: seq})
		if err != nil {
			return nil, err
		}
		return out.ShardIterator, nil
	}
	for _, typ := range []kintypes.ShardIteratorType{kintypes.ShardIteratorTypeAtSequenceNumber, kintypes.ShardIteratorTypeAfterSequenceNumber} {
		_, err := iter(typ, aws.String(seq))
		var ae smithy.APIError
		if !errors.As(err, &ae) || ae.ErrorCode() != "InvalidArgumentException" {
			t.Fatalf("%s: %v, want InvalidArgumentException", typ, err)
		}
		if msg := ae.ErrorMessage(); !containsAll(msg, "StartingSequenceNumber "+seq, "on shard "+aws.ToString(put.ShardId)) {
			t.Fatalf("%s: message %q does not name the sequence number and the shard", typ, msg)
		}
	}
	it, err := iter(kintypes.ShardIteratorTypeTrimHorizon, nil)
	if err != nil {
		t.Fatalf("TRIM_HORIZON: %v", err)
	}
	if _, err := c.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: it}); err != nil {
		t.Fatalf("GetRecords: %v", err)
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
