package runner

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/internal/testenv/proctest"
	"github.com/kcltool/kcltool/leasecore"
)

// checkpointAnswer is an UpdateItem answer to a checkpoint (ALL_NEW, with
// the consumed capacity), as DynamoDB writes it.
const checkpointAnswer = `{"Attributes":{"checkpoint":{"S":"49638387426114320000000000000000000000000000000999"},"checkpointSubSequenceNumber":{"N":"0"},"leaseCounter":{"N":"43"},"leaseKey":{"S":"shardId-000000000000"},"leaseOwner":{"S":"worker-1"},"ownerSwitchesSinceCheckpoint":{"N":"0"},"parentShardId":{"SS":["shardId-000000000001"]},"startingHashKey":{"S":"0"},"endingHashKey":{"S":"340282366920938463463374607431768211455"}},"ConsumedCapacity":{"CapacityUnits":1.0,"TableName":"app"}}`

// BenchmarkCheckpointCallSDK is one checkpoint write as the coordinator
// makes it (leasecore.CheckpointLease through the SDK's UpdateItem, one
// attempt as leasecore's meteredAPI asks) against a server that answers
// every call alike. The server's CPU is in the figure.
func BenchmarkCheckpointCallSDK(b *testing.B) { benchCheckpoint(b) }

// BenchmarkCheckpointDynaliteSDK makes real checkpoints, each of the lease
// the previous one returned, against dynalite (another process: its CPU is
// not in cpu-µs/op, which is kcltool's side alone).
func BenchmarkCheckpointDynaliteSDK(b *testing.B) { benchCheckpointDynalite(b) }

func benchCheckpointDynalite(b *testing.B) {
	ddb := emulator.DynamoDB(b)
	table := emulator.Name(b, "cpbench")
	emulator.CreateLeaseTable(b, ddb, table)
	l := leasecore.Lease{LeaseKey: "shardId-000000000000", LeaseOwner: "worker-1", LeaseCounter: 1,
		ParentShardIDs: []string{"shardId-000000000001"}, StartingHashKey: "0", EndingHashKey: "340282366920938463463374607431768211455",
		Checkpoint: leasecore.SequenceNumber{SequenceNumber: "TRIM_HORIZON"}}
	if _, err := leasecore.CreateLease(context.Background(), ddb, table, l); err != nil {
		b.Fatal(err)
	}
	api := oneTry{api: ddb}
	n := 0
	b.ReportAllocs()
	self0, _ := proctest.Rusage(b)
	for b.Loop() {
		n++
		cp := leasecore.SequenceNumber{SequenceNumber: fmt.Sprintf("4963838742611432000000000000000000000000000000%04d", n%10000)}
		var err error
		if l, err = leasecore.CheckpointLease(context.Background(), api, table, l, cp); err != nil {
			b.Fatal(err)
		}
	}
	self1, _ := proctest.Rusage(b)
	b.ReportMetric(float64((self1-self0).Microseconds())/float64(b.N), "cpu-µs/op")
}

func oneAttempt(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }

// oneTry calls as leasecore's meteredAPI does: no SDK retries.
type oneTry struct{ api DynamoDBAPI }

func (o oneTry) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return o.api.UpdateItem(ctx, in, append(opts, oneAttempt)...)
}

func (o oneTry) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return o.api.GetItem(ctx, in, append(opts, oneAttempt)...)
}

func benchCheckpoint(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("Content-Length", strconv.Itoa(len(checkpointAnswer)))
		w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(checkpointAnswer))), 10))
		_, _ = io.WriteString(w, checkpointAnswer)
	}))
	b.Cleanup(srv.Close)
	ddb := oneTry{api: dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")),
	})}
	l := leasecore.Lease{LeaseKey: "shardId-000000000000", LeaseOwner: "worker-1", LeaseCounter: 42,
		ParentShardIDs: []string{"shardId-000000000001"}, StartingHashKey: "0", EndingHashKey: "340282366920938463463374607431768211455"}
	cp := leasecore.SequenceNumber{SequenceNumber: "49638387426114320000000000000000000000000000000999"}
	b.ReportAllocs()
	self0, _ := proctest.Rusage(b)
	for b.Loop() {
		if _, err := leasecore.CheckpointLease(context.Background(), ddb, "app", l, cp); err != nil {
			b.Fatal(err)
		}
	}
	self1, _ := proctest.Rusage(b)
	b.ReportMetric(float64((self1-self0).Microseconds())/float64(b.N), "cpu-µs/op")
}
