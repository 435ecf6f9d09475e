package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/internal/awserr"
	"github.com/kcltool/kcltool/internal/emulator"
	"github.com/kcltool/kcltool/internal/kpltest"
)

// readBoth makes the same GetRecords call through the SDK's client and the
// lean path, as the fetcher makes it.
func readBoth(t *testing.T, c *kinesis.Client, it string) (sdk, lean readResult) {
	t.Helper()
	l := leanReads(c)
	if _, ok := l.(*leanKinesis); !ok {
		t.Fatal("no lean path for the emulator's client")
	}
	call := func(api KinesisAPI) readResult {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		fast := fastPage{shardID: "shardId-000000000000"}
		out, err := api.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: aws.String(it), Limit: aws.Int32(1000)}, noSDKRetries, fastGetRecords(&fast))
		return readResult{out: out, fast: fast, err: err}
	}
	return call(c), call(l)
}

type readResult struct {
	out  *kinesis.GetRecordsOutput
	fast fastPage
	err  error
}

// classes is how kcltool tells one failed read from another.
func classes(err error) string {
	return fmt.Sprintf("code=%q retryableRead=%v transient=%v throttled=%v timeout=%v notFound=%v deadline=%v",
		awserr.Code(err), awserr.RetryableRead(err), awserr.Transient(err), awserr.Throttled(err), awserr.Timeout(err),
		awserr.NotFound(err), errors.Is(err, context.DeadlineExceeded))
}

// TestLeanGetRecordsAgreesWithTheSDK reads kinesis-local's answers (plain
// records and a KPL aggregate) through both paths and gets the same page,
// and fails the same way on every answer the fetcher tells apart: an
// invalid iterator, a stream that is gone, throttling, a server error, a
// dropped connection, a server that never answers, nothing listening.
func TestLeanGetRecordsAgreesWithTheSDK(t *testing.T) {
	s := newStack(t, 1)
	agg := kpltest.Aggregate(kpltest.Record{PartitionKey: "a", Data: []byte("sub one")}, kpltest.Record{PartitionKey: "b", Data: []byte("sub two")})
	if _, err := s.kin.PutRecords(context.Background(), &kinesis.PutRecordsInput{StreamName: aws.String(s.stream), Records: []kintypes.PutRecordsRequestEntry{
		{PartitionKey: aws.String("k1"), Data: []byte("plain")}, {PartitionKey: aws.String("k2"), Data: agg}, {PartitionKey: aws.String("k3"), Data: []byte{}},
	}}); err != nil {
		t.Fatal(err)
	}
	itOut, err := s.kin.GetShardIterator(context.Background(), &kinesis.GetShardIteratorInput{StreamName: aws.String(s.stream),
		ShardId: aws.String("shardId-000000000000"), ShardIteratorType: kintypes.ShardIteratorTypeTrimHorizon})
	if err != nil {
		t.Fatal(err)
	}
	it := aws.ToString(itOut.ShardIterator)
	sdk, lean := readBoth(t, s.kin, it)
	if sdk.err != nil || lean.err != nil {
		t.Fatalf("sdk: %v; lean: %v", sdk.err, lean.err)
	}
	if !lean.fast.ok || len(lean.fast.records) != 3 || !reflect.DeepEqual(sdk.fast, lean.fast) {
		t.Fatalf("records differ:\nsdk  %+v\nlean %+v", sdk.fast, lean.fast)
	}
	if aws.ToString(lean.out.NextShardIterator) == "" || aws.ToInt64(sdk.out.MillisBehindLatest) != aws.ToInt64(lean.out.MillisBehindLatest) {
		t.Fatalf("answers differ: sdk next %q behind %d; lean next %q behind %d", aws.ToString(sdk.out.NextShardIterator), aws.ToInt64(sdk.out.MillisBehindLatest),
			aws.ToString(lean.out.NextShardIterator), aws.ToInt64(lean.out.MillisBehindLatest))
	}

	through := func(url string) *kinesis.Client {
		return kinesis.NewFromConfig(emulator.Config(), func(o *kinesis.Options) { o.BaseEndpoint = aws.String(url) })
	}
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := "http://" + closed.Addr().String()
	closed.Close()
	cases := []struct {
		name   string
		client *kinesis.Client
		it     string
	}{
		{"invalid iterator", s.kin, "not-an-iterator"},
		{"throttled", through(emulator.NewFaultProxy(t, emulator.KinesisEndpoint(t), emulator.Throttle, 1, "GetRecords", 1).URL), it},
		{"server error", through(emulator.NewFaultProxy(t, emulator.KinesisEndpoint(t), emulator.ServerError, 1, "GetRecords", 1).URL), it},
		{"dropped", through(emulator.NewFaultProxy(t, emulator.KinesisEndpoint(t), emulator.Drop, 1, "GetRecords", 1).URL), it},
		{"not found", through(emulator.NewFaultProxy(t, emulator.KinesisEndpoint(t), emulator.NotFound, 1, "GetRecords", 1).URL), it},
		{"never answered", through(emulator.NewFaultProxy(t, emulator.KinesisEndpoint(t), emulator.Hang, 1, "GetRecords", 1).URL), it},
		{"nothing listening", through(nobody), it},
	}
	for _, c := range cases {
		sdk, lean := readBoth(t, c.client, c.it)
		if sdk.err == nil || lean.err == nil {
			t.Errorf("%s: sdk %v, lean %v: want both to fail", c.name, sdk.err, lean.err)
			continue
		}
		if a, b := classes(sdk.err), classes(lean.err); a != b {
			t.Errorf("%s: classified apart:\nsdk  %s (%v)\nlean %s (%v)", c.name, a, sdk.err, b, lean.err)
		}
		t.Logf("%s: %s", c.name, classes(lean.err))
	}
}
