package runner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kcltool/kcltool/internal/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// checkpointAnswer is an UpdateItem answer to a checkpoint (ALL_NEW, with
// the consumed capacity), as DynamoDB writes it.
const checkpointAnswer = `{"Attributes":{"checkpoint":{"S":"49638387426114320000000000000000000000000000000999"},"checkpointSubSequenceNumber":{"N":"0"},"leaseCounter":{"N":"43"},"leaseKey":{"S":"shardId-000000000000"},"leaseOwner":{"S":"worker-1"},"ownerSwitchesSinceCheckpoint":{"N":"0"},"parentShardId":{"SS":["shardId-000000000001"]},"startingHashKey":{"S":"0"},"endingHashKey":{"S":"340282366920938463463374607431768211455"}},"ConsumedCapacity":{"CapacityUnits":1.0,"TableName":"app"}}`

// BenchmarkCheckpointCallSDK is one checkpoint write as the coordinator
// makes it (leasecore.CheckpointLease through the SDK's UpdateItem, one
// attempt as leasecore's meteredAPI asks) against a server that answers
// every call alike; ...Lean is the same through the worker's lean path
// (leanDynamoDB); ...HTTP is the floor of a hand-built UpdateItem: a
// request of the same size, signed by the SDK's v4 signer, over the same
// transport, the answer read and not decoded (building the body and
// decoding ALL_NEW would come on top). The server's CPU is in the figure.
func BenchmarkCheckpointCallSDK(b *testing.B)  { benchCheckpoint(b, "sdk") }
func BenchmarkCheckpointCallLean(b *testing.B) { benchCheckpoint(b, "lean") }
func BenchmarkCheckpointCallHTTP(b *testing.B) { benchCheckpoint(b, "http") }

// BenchmarkCheckpointDynaliteSDK and ...Lean make real checkpoints, each
// of the lease the previous one returned, against dynalite (another
// process: its CPU is not in cpu-µs/op, which is kcltool's side alone).
func BenchmarkCheckpointDynaliteSDK(b *testing.B)  { benchCheckpointDynalite(b, false) }
func BenchmarkCheckpointDynaliteLean(b *testing.B) { benchCheckpointDynalite(b, true) }

func benchCheckpointDynalite(b *testing.B, lean bool) {
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
	if lean {
		api.api = leanWrites(ddb)
		if _, ok := api.api.(*leanDynamoDB); !ok {
			b.Fatal("no lean path")
		}
	}
	n := 0
	b.ReportAllocs()
	self0, _ := rusage(b)
	for b.Loop() {
		n++
		cp := leasecore.SequenceNumber{SequenceNumber: fmt.Sprintf("4963838742611432000000000000000000000000000000%04d", n%10000)}
		var err error
		if l, err = leasecore.CheckpointLease(context.Background(), api, table, l, cp); err != nil {
			b.Fatal(err)
		}
	}
	self1, _ := rusage(b)
	b.ReportMetric(float64((self1-self0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// oneTry calls as leasecore's meteredAPI does: no SDK retries.
type oneTry struct{ api DynamoDBAPI }

func (o oneTry) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return o.api.UpdateItem(ctx, in, append(opts, oneAttempt)...)
}

func (o oneTry) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return o.api.GetItem(ctx, in, append(opts, oneAttempt)...)
}

func benchCheckpoint(b *testing.B, path string) {
	raw := path == "http"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("Content-Length", strconv.Itoa(len(checkpointAnswer)))
		w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(checkpointAnswer))), 10))
		_, _ = io.WriteString(w, checkpointAnswer)
	}))
	b.Cleanup(srv.Close)
	client := dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")),
	})
	ddb := oneTry{api: client}
	if path == "lean" {
		ddb.api = leanWrites(client)
		if _, ok := ddb.api.(*leanDynamoDB); !ok {
			b.Fatal("no lean path")
		}
	}
	l := leasecore.Lease{LeaseKey: "shardId-000000000000", LeaseOwner: "worker-1", LeaseCounter: 42,
		ParentShardIDs: []string{"shardId-000000000001"}, StartingHashKey: "0", EndingHashKey: "340282366920938463463374607431768211455"}
	cp := leasecore.SequenceNumber{SequenceNumber: "49638387426114320000000000000000000000000000000999"}
	// About the size of the SDK's request body for this checkpoint.
	body := bytes.Repeat([]byte("x"), 900)
	signer := v4.NewSigner()
	b.ReportAllocs()
	self0, _ := rusage(b)
	for b.Loop() {
		if raw {
			req, err := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/x-amz-json-1.0")
			req.Header.Set("X-Amz-Target", "DynamoDB_20120810.UpdateItem")
			creds, err := client.Options().Credentials.Retrieve(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			sum := sha256.Sum256(body)
			if err := signer.SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), "dynamodb", "us-east-1", time.Now()); err != nil {
				b.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			continue
		}
		if _, err := leasecore.CheckpointLease(context.Background(), ddb, "app", l, cp); err != nil {
			b.Fatal(err)
		}
	}
	self1, _ := rusage(b)
	b.ReportMetric(float64((self1-self0).Microseconds())/float64(b.N), "cpu-µs/op")
}
