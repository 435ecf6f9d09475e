package inspect

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// catalogProbe counts the catalog's calls to the local DynamoDB and the
// most DescribeTable calls in flight at once.
type catalogProbe struct {
	*dynamodb.Client
	lists, describes    atomic.Int64
	mu                  sync.Mutex
	inFlight, maxFlight int
	scanLimit           int32
	scanned             []map[string]types.AttributeValue
}

func (p *catalogProbe) ListTables(ctx context.Context, in *dynamodb.ListTablesInput, opts ...func(*dynamodb.Options)) (*dynamodb.ListTablesOutput, error) {
	p.lists.Add(1)
	return p.Client.ListTables(ctx, in, opts...)
}

func (p *catalogProbe) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	p.describes.Add(1)
	p.mu.Lock()
	p.inFlight++
	p.maxFlight = max(p.maxFlight, p.inFlight)
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.inFlight--
		p.mu.Unlock()
	}()
	return p.Client.DescribeTable(ctx, in, opts...)
}

// Scan pages with a small Limit, so a few items take several pages, and
// keeps the items exactly as the server sent them.
func (p *catalogProbe) Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	if p.scanLimit > 0 {
		in.Limit = aws.Int32(p.scanLimit)
	}
	out, err := p.Client.Scan(ctx, in, opts...)
	if err == nil {
		p.scanned = append(p.scanned, out.Items...)
	}
	return out, err
}

func TestLeaseTablesPagesAndDescribesOnlyThePrefix(t *testing.T) {
	ddb := emulator.DynamoDB(t)
	base := emulator.Name(t, "cat")
	for _, n := range []string{"-a", "-b", "-c"} {
		emulator.CreateLeaseTable(t, ddb, base+n)
	}
	_, err := ddb.CreateTable(context.Background(), &dynamodb.CreateTableInput{TableName: aws.String(base + "-plain"),
		BillingMode:          types.BillingModePayPerRequest,
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}}})
	if err != nil {
		t.Fatal(err)
	}
	p := &catalogProbe{Client: ddb}
	got, err := LeaseTables(context.Background(), p, CatalogOptions{Prefix: base, PageSize: 1, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{base + "-a", base + "-b", base + "-c"}; !slices.Equal(got, want) {
		t.Errorf("lease tables %q, want %q", got, want)
	}
	if n := p.lists.Load(); n < 4 {
		t.Errorf("%d ListTables calls with a page of 1 over at least 4 tables: the listing did not page", n)
	}
	if n := p.describes.Load(); n != 4 {
		t.Errorf("%d DescribeTable calls, want 4: only the tables with the prefix", n)
	}
	if p.maxFlight > 2 {
		t.Errorf("%d DescribeTable calls at once, want at most 2", p.maxFlight)
	}
}

func TestLeaseTablesGivesNothingPastTheDeadline(t *testing.T) {
	ddb := emulator.DynamoDB(t)
	base := emulator.Name(t, "cat")
	emulator.CreateLeaseTable(t, ddb, base)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got, err := LeaseTables(ctx, ddb, CatalogOptions{Prefix: base})
	if err == nil || got != nil {
		t.Errorf("got %q, %v; want nothing and an error", got, err)
	}
}

func TestStreamNamesPages(t *testing.T) {
	kin := emulator.Kinesis(t)
	base := emulator.Name(t, "cat")
	for _, n := range []string{"-x", "-y", "-z"} {
		emulator.CreateStream(t, kin, base+n, 1)
	}
	p := &streamProbe{Client: kin}
	got, err := StreamNames(context.Background(), p, CatalogOptions{Prefix: base, PageSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{base + "-x", base + "-y", base + "-z"}; !slices.Equal(got, want) {
		t.Errorf("streams %q, want %q", got, want)
	}
	if p.calls < 3 {
		t.Errorf("%d ListStreams calls with a page of 1 over 3 streams: the listing did not page", p.calls)
	}
}

type streamProbe struct {
	*kinesis.Client
	calls int
}

func (p *streamProbe) ListStreams(ctx context.Context, in *kinesis.ListStreamsInput, opts ...func(*kinesis.Options)) (*kinesis.ListStreamsOutput, error) {
	p.calls++
	return p.Client.ListStreams(ctx, in, opts...)
}

// TestLeaseNamesReadsOnlyNames: the scan projects the five attributes that
// name a lease, pages through the table, skips non-lease items and derives
// multi-stream shard ids as the lease codec does.
func TestLeaseNamesReadsOnlyNames(t *testing.T) {
	ddb := emulator.DynamoDB(t)
	table := emulator.Name(t, "cat")
	emulator.CreateLeaseTable(t, ddb, table)
	put := func(attrs ...string) {
		item := map[string]types.AttributeValue{
			"checkpoint": &types.AttributeValueMemberS{Value: "TRIM_HORIZON"}, "leaseCounter": &types.AttributeValueMemberN{Value: "3"},
		}
		for i := 0; i < len(attrs); i += 2 {
			item[attrs[i]] = &types.AttributeValueMemberS{Value: attrs[i+1]}
		}
		if _, err := ddb.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	put("leaseKey", "111122223333:orders:1700000000:shardId-000000000001", "leaseOwner", "w1",
		"streamName", "111122223333:orders:1700000000", "shardId", "shardId-000000000001")
	put("leaseKey", "111122223333:payments:1700000002:shardId-000000000004") // the shard and stream only in the key
	put("leaseKey", "shardId-000000000009", "leaseOwner", "w2", "entityType", "LEASE")
	put("leaseKey", "Leader", "entityType", "LEADER", "ownerName", "w1")

	p := &catalogProbe{Client: ddb, scanLimit: 1}
	got, err := LeaseNames(context.Background(), p, table)
	if err != nil {
		t.Fatal(err)
	}
	want := []LeaseName{
		{Key: "111122223333:orders:1700000000:shardId-000000000001", ShardID: "shardId-000000000001", StreamID: "111122223333:orders:1700000000", Owner: "w1"},
		{Key: "111122223333:payments:1700000002:shardId-000000000004", ShardID: "shardId-000000000004", StreamID: "111122223333:payments:1700000002"},
		{Key: "shardId-000000000009", ShardID: "shardId-000000000009", Owner: "w2"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("lease names\n%+v\nwant\n%+v", got, want)
	}
	if len(p.scanned) != 4 {
		t.Errorf("%d items scanned, want all 4", len(p.scanned))
	}
	for _, item := range p.scanned {
		for attr := range item {
			if !slices.Contains(leaseNameAttrs, attr) {
				t.Errorf("the scan returned %q: the projection is missing", attr)
			}
		}
	}
	if !got[1].OfStream("payments") || got[1].OfStream("orders") || !got[0].OfStream("111122223333:orders:1700000000") || !got[2].OfStream("orders") {
		t.Errorf("OfStream does not match --stream by name or identifier")
	}
}
