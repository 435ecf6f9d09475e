package emulator

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
)

// Stack is what most end-to-end tests start from: a Kinesis stream and a
// lease table on the local servers, named after the test, and a client for
// each.
type Stack struct {
	DynamoDB *dynamodb.Client
	Kinesis  *kinesis.Client
	Stream   string
	Table    string
}

// StackOptions name a Stack's stream and table, and say whether the table
// is created.
type StackOptions struct {
	// StreamPrefix and TablePrefix are the prefixes given to Name: "s" and
	// "app" when empty. Golden files that normalise names by prefix need
	// their own.
	StreamPrefix, TablePrefix string
	// NoTable names the table without creating it, for tests where the
	// code under test creates it, as a kcltool worker creates its lease
	// table when it starts.
	NoTable bool
}

// NewStreamAndTable creates a stream of shards shards and a lease table
// shaped as the KCL creates it, and waits until both are active.
func NewStreamAndTable(tb testing.TB, shards int32) Stack {
	tb.Helper()
	return NewStack(tb, shards, StackOptions{})
}

// NewStack is NewStreamAndTable with names and the table's creation chosen
// by opt.
func NewStack(tb testing.TB, shards int32, opt StackOptions) Stack {
	tb.Helper()
	if opt.StreamPrefix == "" {
		opt.StreamPrefix = "s"
	}
	if opt.TablePrefix == "" {
		opt.TablePrefix = "app"
	}
	s := Stack{DynamoDB: DynamoDB(tb), Kinesis: Kinesis(tb), Stream: Name(tb, opt.StreamPrefix), Table: Name(tb, opt.TablePrefix)}
	CreateStream(tb, s.Kinesis, s.Stream, shards)
	if !opt.NoTable {
		CreateLeaseTable(tb, s.DynamoDB, s.Table)
	}
	return s
}
