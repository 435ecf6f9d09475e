// Command demo prepares `make demo`: against the local servers it creates a
// 4-shard stream and its KCL lease table, the way a KCL application would
// (shard sync, then two workers sharing the leases with the lease protocol),
// and checkpoints one shard after reading real records. It only prepares;
// the Makefile then runs kcltool against the result.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
)

const app = "demo-orders"

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func say(format string, args ...any) { fmt.Fprintf(os.Stderr, "demo: "+format+"\n", args...) }

func run(ctx context.Context) error {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return err
	}
	ddb, kin := dynamodb.NewFromConfig(cfg), kinesis.NewFromConfig(cfg)
	if err := reset(ctx, ddb, kin); err != nil {
		return err
	}
	say("creating stream %q with 4 shards", app)
	if _, err := kin.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String(app), ShardCount: aws.Int32(4)}); err != nil {
		return err
	}
	if err := kinesis.NewStreamExistsWaiter(kin).Wait(ctx, &kinesis.DescribeStreamInput{StreamName: aws.String(app)}, time.Minute); err != nil {
		return err
	}
	say("producing 200 records")
	if err := produce(ctx, kin, 200); err != nil {
		return err
	}
	say("creating lease table %q as the KCL does (PAY_PER_REQUEST, hash key leaseKey)", app)
	if err := leasecore.EnsureTable(ctx, ddb, app, true); err != nil {
		return err
	}
	rep, err := reshard.SyncShards(ctx, kin, ddb, reshard.Table{Name: app}, reshard.SyncOptions{
		Stream: reshard.Stream{Name: app}, Initial: reshard.TrimHorizon(),
	})
	if err != nil {
		return err
	}
	say("shard sync created %d leases at TRIM_HORIZON", len(rep.Created))
	if err := shareLeases(ctx, ddb); err != nil {
		return err
	}
	return checkpointOne(ctx, ddb, kin)
}

// reset removes what an earlier demo left, so every run starts the same.
func reset(ctx context.Context, ddb *dynamodb.Client, kin *kinesis.Client) error {
	var nf *ddbtypes.ResourceNotFoundException
	if _, err := ddb.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(app)}); err != nil && !errors.As(err, &nf) {
		return err
	}
	_ = dynamodb.NewTableNotExistsWaiter(ddb).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(app)}, time.Minute)
	var knf *kintypes.ResourceNotFoundException
	if _, err := kin.DeleteStream(ctx, &kinesis.DeleteStreamInput{StreamName: aws.String(app)}); err != nil && !errors.As(err, &knf) {
		return err
	}
	return kinesis.NewStreamNotExistsWaiter(kin).Wait(ctx, &kinesis.DescribeStreamInput{StreamName: aws.String(app)}, time.Minute)
}

func produce(ctx context.Context, kin *kinesis.Client, n int) error {
	var entries []kintypes.PutRecordsRequestEntry
	for i := range n {
		entries = append(entries, kintypes.PutRecordsRequestEntry{
			PartitionKey: aws.String(fmt.Sprintf("customer-%03d", i%50)),
			Data:         fmt.Appendf(nil, `{"order":%d}`, i),
		})
	}
	_, err := kin.PutRecords(ctx, &kinesis.PutRecordsInput{StreamName: aws.String(app), Records: entries})
	return err
}

// shareLeases runs two workers with the lease protocol until they hold two
// leases each, then stops them without releasing, as crashed or paused
// workers leave a table.
func shareLeases(ctx context.Context, ddb *dynamodb.Client) error {
	var workers []*leasecore.Coordinator
	for _, id := range []string{"worker-a", "worker-b"} {
		c, err := leasecore.NewCoordinator(ddb, app, leasecore.Config{WorkerID: id, FailoverTime: time.Second}, leasecore.RealClock(), leasecore.Options{})
		if err != nil {
			return err
		}
		if err := c.Start(ctx); err != nil {
			return err
		}
		workers = append(workers, c)
		time.Sleep(300 * time.Millisecond)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && !(len(workers[0].Held()) == 2 && len(workers[1].Held()) == 2) {
		time.Sleep(100 * time.Millisecond)
	}
	say("worker-a holds %d leases, worker-b holds %d", len(workers[0].Held()), len(workers[1].Held()))
	for _, w := range workers {
		if err := w.Stop(ctx, false); err != nil {
			return err
		}
	}
	return nil
}

// checkpointOne reads shard 0 and checkpoints its last record, as a worker
// does after processing a batch.
func checkpointOne(ctx context.Context, ddb *dynamodb.Client, kin *kinesis.Client) error {
	const shard = "shardId-000000000000"
	it, err := kin.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String(app), ShardId: aws.String(shard), ShardIteratorType: kintypes.ShardIteratorTypeTrimHorizon})
	if err != nil {
		return err
	}
	out, err := kin.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: it.ShardIterator})
	if err != nil || len(out.Records) == 0 {
		return fmt.Errorf("read %s: %v (%d records)", shard, err, len(out.Records))
	}
	l, found, err := leasecore.GetLease(ctx, ddb, app, shard, true)
	if err != nil || !found {
		return fmt.Errorf("lease %s: found=%v err=%v", shard, found, err)
	}
	last := aws.ToString(out.Records[len(out.Records)-1].SequenceNumber)
	if _, err := leasecore.CheckpointLease(ctx, ddb, app, l, leasecore.SequenceNumber{SequenceNumber: last}); err != nil {
		return err
	}
	say("checkpointed %s after %d records", shard, len(out.Records))
	return nil
}
