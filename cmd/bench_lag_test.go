package cmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
)

// TestBenchCheckpointDiff is `make bench`'s lag figure: `checkpoint diff -o
// json` on a 500-shard stream with 500 leases, against the same facts
// gathered the naive way (ListShards, then per shard one GetItem, one
// GetShardIterator and one GetRecords, in sequence). Both run in the same
// process against the same servers, alternately.
func TestBenchCheckpointDiff(t *testing.T) {
	if os.Getenv("KCLTOOL_BENCH") == "" {
		t.Skip("benchmark: run with KCLTOOL_BENCH=1 (make bench)")
	}
	const shards, rounds = 500, 2
	kin, ddb := emulator.Kinesis(t), emulator.DynamoDB(t)
	stream, table := emulator.Name(t, "lagbench"), emulator.Name(t, "lagbench")
	emulator.CreateStream(t, kin, stream, shards)
	// Other benchmarks in this binary share the server and its shard limit.
	direct := kin // kin is pointed at a proxy below, closed before this cleanup runs
	t.Cleanup(func() {
		_, _ = direct.DeleteStream(context.Background(), &kinesis.DeleteStreamInput{StreamName: aws.String(stream)})
	})
	emulator.CreateLeaseTable(t, ddb, table)
	seqs := putOnePerShard(t, kin, stream, shards)
	for id, seq := range seqs {
		l := leasecore.Lease{LeaseKey: id, LeaseOwner: "worker-a", Checkpoint: leasecore.SequenceNumber{SequenceNumber: seq}}
		if _, err := leasecore.CreateLease(context.Background(), ddb, table, l); err != nil {
			t.Fatal(err)
		}
	}
	// Both contenders reach the servers through proxies. Run once as is, the
	// local servers' own CPU is all there is; run again with a 20 ms hold per
	// request, the round trip to a real region, which is what concurrent
	// reads win back in production.
	kinProxy := emulator.NewFaultProxy(t, emulator.KinesisEndpoint(t), emulator.Throttle, 0, "", 1)
	ddbProxy := emulator.NewFaultProxy(t, emulator.DynamoDBEndpoint(t), emulator.Throttle, 0, "", 1)
	base, _, _ := testFactory(t, false, map[string]string{"AWS_ENDPOINT_URL_KINESIS": kinProxy.URL, "AWS_ENDPOINT_URL_DYNAMODB": ddbProxy.URL})
	kin = kinesis.NewFromConfig(emulator.Config(), func(o *kinesis.Options) { o.BaseEndpoint = aws.String(kinProxy.URL) })
	ddb = dynamodb.NewFromConfig(emulator.Config(), func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(ddbProxy.URL) })
	var reads atomic.Int64
	diff := func() {
		f := cmdutil.NewFactory(&cmdutil.IOStreams{Out: io.Discard, ErrOut: io.Discard}, base.Getenv)
		if code := Run(context.Background(), f, []string{"checkpoint", "diff", "--app", table, "--stream", stream, "-o", "json"}); code != 0 {
			t.Fatalf("checkpoint diff exit %d", code)
		}
	}
	naive := func() {
		ctx := context.Background()
		all, err := reshard.ListShards(ctx, kin, reshard.Stream{Name: stream}, reshard.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, sh := range all {
			item, err := ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table),
				Key: map[string]types.AttributeValue{"leaseKey": &types.AttributeValueMemberS{Value: *sh.ShardId}}})
			if err != nil {
				t.Fatal(err)
			}
			cp := item.Item["checkpoint"].(*types.AttributeValueMemberS).Value
			it, err := kin.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String(stream), ShardId: sh.ShardId,
				ShardIteratorType: kintypes.ShardIteratorTypeAfterSequenceNumber, StartingSequenceNumber: aws.String(cp)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := kin.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: it.ShardIterator, Limit: aws.Int32(1)}); err != nil {
				t.Fatal(err)
			}
			reads.Add(1)
		}
	}
	before := kinProxy.Requests()
	diff()
	after := kinProxy.Requests()
	if got := after["GetRecords"] - before["GetRecords"]; got > shards {
		t.Fatalf("checkpoint diff made %d GetRecords calls for %d shards: a shard was read twice", got, shards)
	}
	fmt.Printf("bench checkpoint-diff: one run made %d GetShardIterator and %d GetRecords calls for %d shards\n",
		after["GetShardIterator"]-before["GetShardIterator"], after["GetRecords"]-before["GetRecords"], shards)
	for _, rtt := range []time.Duration{0, 20 * time.Millisecond} {
		kinProxy.SetDelay(rtt)
		ddbProxy.SetDelay(rtt)
		var diffT, naiveT []time.Duration
		for range rounds {
			diffT = append(diffT, timed(diff))
			naiveT = append(naiveT, timed(naive))
		}
		d, n := median(diffT), median(naiveT)
		fmt.Printf("bench checkpoint-diff: %d shards, %d leases, round trip %s, %d rounds: kcltool checkpoint diff median %s; naive shard-by-shard median %s; speed-up %.1fx (goal >= 5x at a real round trip)\n",
			shards, shards, rtt, rounds, d.Round(time.Millisecond), n.Round(time.Millisecond), float64(n)/float64(d))
	}
}
