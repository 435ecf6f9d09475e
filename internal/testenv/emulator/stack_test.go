package emulator

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
)

// TestNewStreamAndTable: the stream has the shards asked for, the table is
// a lease table, and both are named after the test.
func TestNewStreamAndTable(t *testing.T) {
	s := NewStreamAndTable(t, 3)
	ctx := context.Background()
	shards, err := s.Kinesis.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String(s.Stream)})
	if err != nil || len(shards.Shards) != 3 {
		t.Fatalf("list shards: %v (%+v)", err, shards)
	}
	out, err := s.DynamoDB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(s.Table)})
	if err != nil {
		t.Fatal(err)
	}
	if ks := out.Table.KeySchema; len(ks) != 1 || aws.ToString(ks[0].AttributeName) != "leaseKey" {
		t.Errorf("key schema %+v, want leaseKey alone", ks)
	}
	if !strings.HasPrefix(s.Stream, "s-TestNewStreamAndTable") || !strings.HasPrefix(s.Table, "app-TestNewStreamAndTable") {
		t.Errorf("names %q, %q", s.Stream, s.Table)
	}
}

// TestNewStackWithoutTable names the table with the prefix given and
// leaves it to be created.
func TestNewStackWithoutTable(t *testing.T) {
	s := NewStack(t, 1, StackOptions{StreamPrefix: "views", TablePrefix: "orders", NoTable: true})
	if !strings.HasPrefix(s.Stream, "views-") || !strings.HasPrefix(s.Table, "orders-") {
		t.Errorf("names %q, %q", s.Stream, s.Table)
	}
	_, err := s.DynamoDB.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(s.Table)})
	var nf *ddbtypes.ResourceNotFoundException
	if !errors.As(err, &nf) {
		t.Errorf("describe table: %v, want ResourceNotFoundException", err)
	}
}
