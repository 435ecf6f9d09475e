package emulator

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
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
