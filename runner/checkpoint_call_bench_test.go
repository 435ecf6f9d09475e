package runner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
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

	"github.com/kcltool/kcltool/leasecore"
)

// checkpointAnswer is an UpdateItem answer to a checkpoint (ALL_NEW, with
// the consumed capacity), as DynamoDB writes it.
const checkpointAnswer = `{"Attributes":{"checkpoint":{"S":"49638387426114320000000000000000000000000000000999"},"checkpointSubSequenceNumber":{"N":"0"},"leaseCounter":{"N":"43"},"leaseKey":{"S":"shardId-000000000000"},"leaseOwner":{"S":"worker-1"},"ownerSwitchesSinceCheckpoint":{"N":"0"},"parentShardId":{"SS":["shardId-000000000001"]},"startingHashKey":{"S":"0"},"endingHashKey":{"S":"340282366920938463463374607431768211455"}},"ConsumedCapacity":{"CapacityUnits":1.0,"TableName":"app"}}`

// BenchmarkCheckpointCallSDK is one checkpoint write as the coordinator
// makes it (leasecore.CheckpointLease through the SDK's UpdateItem)
// against a server that answers every call alike; ...HTTP is the floor of
// a hand-built UpdateItem: a request of the same size, signed by the SDK's
// v4 signer, over the same transport, the answer read and not decoded
// (building the body and decoding ALL_NEW would come on top).
func BenchmarkCheckpointCallSDK(b *testing.B)  { benchCheckpoint(b, false) }
func BenchmarkCheckpointCallHTTP(b *testing.B) { benchCheckpoint(b, true) }

func benchCheckpoint(b *testing.B, raw bool) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("Content-Length", strconv.Itoa(len(checkpointAnswer)))
		_, _ = io.WriteString(w, checkpointAnswer)
	}))
	b.Cleanup(srv.Close)
	ddb := dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")),
	})
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
			creds, err := ddb.Options().Credentials.Retrieve(context.Background())
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
