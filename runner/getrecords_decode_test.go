package runner

import (
	"context"
	"math/big"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/internal/emulator"
)

// sameAnswer calls GetRecords with the SDK's decoder and with the fast one
// on the same iterator (iterators may be reused) and requires the same
// result.
func sameAnswer(t *testing.T, kin *kinesis.Client, it *string) *kinesis.GetRecordsOutput {
	t.Helper()
	ctx := context.Background()
	sdk, err := kin.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: it})
	if err != nil {
		t.Fatal(err)
	}
	fast, err := kin.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: it}, fastGetRecords)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(sdk.Records, fast.Records) {
		t.Fatalf("records differ:\nSDK  %+v\nfast %+v", sdk.Records, fast.Records)
	}
	if !reflect.DeepEqual(sdk.ChildShards, fast.ChildShards) || (sdk.NextShardIterator == nil) != (fast.NextShardIterator == nil) ||
		(sdk.MillisBehindLatest == nil) != (fast.MillisBehindLatest == nil) {
		t.Fatalf("answers differ:\nSDK  %+v\nfast %+v", sdk, fast)
	}
	return fast
}

// On kinesis-local's own answers the fast decoder gives exactly what the
// SDK's gives: binary data, keys that need escaping in JSON, arrival times,
// a KPL aggregate, and the ChildShards page at the end of a split shard.
func TestFastGetRecordsMatchesSDK(t *testing.T) {
	ctx := context.Background()
	kin := emulator.Kinesis(t)
	stream := emulator.Name(t, "fast")
	emulator.CreateStream(t, kin, stream, 1)
	binary := make([]byte, 256)
	for i := range binary {
		binary[i] = byte(i)
	}
	entries := []kintypes.PutRecordsRequestEntry{
		{PartitionKey: aws.String("plain"), Data: []byte("hello")},
		{PartitionKey: aws.String(`quote" back\ slash/ é ☃ \u0041`), Data: binary},
		{PartitionKey: aws.String("agg"), Data: aggregate(userRecord{PartitionKey: "a", Data: []byte("a1")}, userRecord{PartitionKey: "b", ExplicitHashKey: "7", Data: []byte("b1")})},
	}
	for i := range 40 {
		entries = append(entries, kintypes.PutRecordsRequestEntry{PartitionKey: aws.String(string(rune('a' + i%26))), Data: []byte{byte(i)}})
	}
	if _, err := kin.PutRecords(ctx, &kinesis.PutRecordsInput{StreamName: aws.String(stream), Records: entries}); err != nil {
		t.Fatal(err)
	}
	if _, err := kin.SplitShard(ctx, &kinesis.SplitShardInput{StreamName: aws.String(stream), ShardToSplit: aws.String("shardId-000000000000"),
		NewStartingHashKey: aws.String(new(big.Int).Lsh(big.NewInt(1), 127).String())}); err != nil {
		t.Fatal(err)
	}
	emulator.WaitStreamActive(t, kin, stream)
	it, err := kin.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String(stream),
		ShardId: aws.String("shardId-000000000000"), ShardIteratorType: kintypes.ShardIteratorTypeTrimHorizon})
	if err != nil {
		t.Fatal(err)
	}
	before := sdkDecoded.Load()
	iter, records, children := it.ShardIterator, 0, 0
	for iter != nil && records+children < 1000 {
		out := sameAnswer(t, kin, iter)
		records += len(out.Records)
		children += len(out.ChildShards)
		iter = out.NextShardIterator
	}
	if records != len(entries) || children != 2 {
		t.Fatalf("read %d records and %d child shards, want %d and 2", records, children, len(entries))
	}
	if n := sdkDecoded.Load() - before; n != 1 {
		t.Fatalf("%d answers went to the SDK's decoder, want only the one with ChildShards", n)
	}
}

// Answers shaped other than kinesis-local shapes them: white space, other
// field orders, nulls, unknown fields, escapes, and garbage, which must give
// the SDK's result (or its error).
func TestFastGetRecordsMatchesSDKOnOddAnswers(t *testing.T) {
	bodies := []string{
		`{"Records":[],"MillisBehindLatest":0,"NextShardIterator":"it"}`,
		` { "NextShardIterator" : "it\/x" , "Records" : [ { "SequenceNumber" : "1" , "Data" : "aGk=" , "PartitionKey" : "k\u00e9\"" , "ApproximateArrivalTimestamp" : 1.700000000123E9 , "Extra" : {"a":[1,true,null]} } ] , "MillisBehindLatest" : 12 } `,
		`{"Records":[{"Data":"","PartitionKey":"k","SequenceNumber":"2","ApproximateArrivalTimestamp":1700000000.9999,"EncryptionType":"KMS"}],"NextShardIterator":null,"ChildShards":[{"ShardId":"shardId-000000000002","ParentShards":["shardId-000000000000"],"HashKeyRange":{"StartingHashKey":"0","EndingHashKey":"9"}}]}`,
		`{"Records":null,"MillisBehindLatest":5}`,
		`{"Records":[{"Data":"not base64!","SequenceNumber":"3"}]}`,
		`{"Records":[{"Data":"aGk=","SequenceNumber":"3"}],}`,
		`{"Records":[{"Data":"aGk=","SequenceNumber":"3"}]} trailing`,
		`{"MillisBehindLatest":1.5}`,
		// Escapes in data are valid JSON but no base64: the SDK decodes them.
		`{"Records":[{"Data":"aGk\u003d","PartitionKey":"k","SequenceNumber":"4"}]}`,
		"{\"Records\":[{\"Data\":\"aGk=\",\"PartitionKey\":\"k\x01\",\"SequenceNumber\":\"5\"}]}",
	}
	for i, body := range bodies {
		if fast := i == 0 || i == 1 || i == 3; fast != (decodeGetRecords([]byte(body), &kinesis.GetRecordsOutput{}) == nil) {
			t.Errorf("body %d: fast path taken %v, want %v", i, !fast, fast)
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/x-amz-json-1.1")
			_, _ = w.Write([]byte(body))
		}))
		kin := kinesis.NewFromConfig(emulator.Config(), func(o *kinesis.Options) {
			o.BaseEndpoint = aws.String(srv.URL)
			o.RetryMaxAttempts = 1
		})
		ctx := context.Background()
		sdk, sdkErr := kin.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: aws.String("x")})
		fast, fastErr := kin.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: aws.String("x")}, fastGetRecords)
		srv.Close()
		if (sdkErr == nil) != (fastErr == nil) {
			t.Fatalf("body %s: SDK error %v, fast error %v", body, sdkErr, fastErr)
		}
		if sdkErr != nil {
			continue
		}
		sdk.ResultMetadata, fast.ResultMetadata = fast.ResultMetadata, sdk.ResultMetadata
		if !reflect.DeepEqual(sdk.Records, fast.Records) || !reflect.DeepEqual(sdk.ChildShards, fast.ChildShards) ||
			!reflect.DeepEqual(sdk.NextShardIterator, fast.NextShardIterator) || !reflect.DeepEqual(sdk.MillisBehindLatest, fast.MillisBehindLatest) {
			t.Fatalf("body %s:\nSDK  %+v\nfast %+v", body, sdk, fast)
		}
	}
}
