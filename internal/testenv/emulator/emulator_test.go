package emulator

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// TestServersAnswer checks both servers start and answer the real SDK.
func TestServersAnswer(t *testing.T) {
	ddb := DynamoDB(t)
	table := Name(t, "t")
	CreateLeaseTable(t, ddb, table)
	out, err := ddb.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil || *out.Table.TableName != table {
		t.Fatalf("describe table: %v", err)
	}
	kin := Kinesis(t)
	stream := Name(t, "s")
	CreateStream(t, kin, stream, 2)
	shards, err := kin.ListShards(context.Background(), &kinesis.ListShardsInput{StreamName: aws.String(stream)})
	if err != nil || len(shards.Shards) != 2 {
		t.Fatalf("list shards: %v (%d shards)", err, len(shards.Shards))
	}
}

// TestMissingNodeFailsWithAMessage: without node on PATH the harness
// refuses with an error that says what to install; it never skips.
func TestMissingNodeFailsWithAMessage(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	err = ensureInstalled(root)
	if err == nil || !strings.Contains(err.Error(), "node is not installed") || !strings.Contains(err.Error(), "install node and npm") {
		t.Fatalf("want a clear missing-node error, got %v", err)
	}
}

// TestS3ServerAnswers: s3rver starts, takes the tests' "local" key, and
// answers the SDK's path-style put, list and get of an object.
func TestS3ServerAnswers(t *testing.T) {
	c := S3(t)
	bucket := Bucket(t)
	CreateBucket(t, c, bucket)
	ctx := context.Background()
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("p/a.json"), Body: strings.NewReader(`{"a":1}`)}); err != nil {
		t.Fatalf("put: %v", err)
	}
	l, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String("p/")})
	if err != nil || len(l.Contents) != 1 || *l.Contents[0].Key != "p/a.json" || *l.Contents[0].Size != 7 {
		t.Fatalf("list: %v %+v", err, l)
	}
	g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("p/a.json")})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	defer g.Body.Close()
	b, _ := io.ReadAll(g.Body)
	if string(b) != `{"a":1}` {
		t.Fatalf("get: %q", b)
	}
}
