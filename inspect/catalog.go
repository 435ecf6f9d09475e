package inspect

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kcltool/kcltool/internal/awserr"
	"github.com/kcltool/kcltool/leasecore"
)

// The catalog answers "what is there to name": the lease tables and streams
// of an account and the shards and owners of one lease table. Shell
// completion asks these on every Tab, so each costs as few calls as it can.

// TableCatalogAPI lists tables and reads their key schema.
type TableCatalogAPI interface {
	ListTables(ctx context.Context, params *dynamodb.ListTablesInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ListTablesOutput, error)
	DescribeTable(ctx context.Context, params *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// StreamCatalogAPI lists streams.
type StreamCatalogAPI interface {
	ListStreams(ctx context.Context, params *kinesis.ListStreamsInput, optFns ...func(*kinesis.Options)) (*kinesis.ListStreamsOutput, error)
}

// CatalogOptions narrows and paces a catalog listing.
type CatalogOptions struct {
	// Prefix keeps only names that start with it. Tables without it are
	// never described, so a prefix makes LeaseTables cheap.
	Prefix string
	// PageSize is the Limit of each list call (the service's default when 0).
	PageSize int32
	// Concurrency bounds the DescribeTable calls in flight (8 when 0).
	Concurrency int
}

// DefaultCatalogConcurrency is how many tables LeaseTables describes at
// once: enough to read a hundred tables in a fraction of a second, few
// enough not to be throttled by DynamoDB's control plane.
const DefaultCatalogConcurrency = 8

// LeaseTables returns, sorted, the tables whose key schema is a lease
// table's: one hash key named leaseKey. Tables that vanish or may not be
// described between the listing and the description are left out; any
// other failure fails the whole listing, so a partial answer is never
// taken for the whole.
func LeaseTables(ctx context.Context, api TableCatalogAPI, opt CatalogOptions) ([]string, error) {
	names, err := tableNames(ctx, api, opt)
	if err != nil {
		return nil, err
	}
	workers := opt.Concurrency
	if workers <= 0 {
		workers = DefaultCatalogConcurrency
	}
	lease := make([]bool, len(names))
	errs := make([]error, len(names))
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				errs[i] = ctx.Err()
				return
			}
			defer func() { <-sem }()
			out, err := api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
			switch {
			case err == nil:
				lease[i] = out.Table != nil && IsLeaseTableKey(out.Table.KeySchema)
			case ctx.Err() == nil && skippableDescribeError(err):
			default:
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var out []string
	for i, name := range names {
		if lease[i] {
			out = append(out, name)
		}
	}
	return out, nil
}

// IsLeaseTableKey reports whether a key schema is a KCL lease table's: a
// single hash key leaseKey (the KCL 3.x CoordinatorState and
// WorkerMetricStats tables are keyed otherwise).
func IsLeaseTableKey(ks []types.KeySchemaElement) bool {
	return len(ks) == 1 && aws.ToString(ks[0].AttributeName) == leasecore.AttrLeaseKey && ks[0].KeyType == types.KeyTypeHash
}

func skippableDescribeError(err error) bool {
	return awserr.NotFound(err) || awserr.AccessDenied(err)
}

func tableNames(ctx context.Context, api TableCatalogAPI, opt CatalogOptions) ([]string, error) {
	in := &dynamodb.ListTablesInput{}
	if opt.PageSize > 0 {
		in.Limit = aws.Int32(opt.PageSize)
	}
	var names []string
	for {
		out, err := api.ListTables(ctx, in)
		if err != nil {
			return nil, err
		}
		for _, n := range out.TableNames {
			if strings.HasPrefix(n, opt.Prefix) {
				names = append(names, n)
			}
		}
		if out.LastEvaluatedTableName == nil {
			sort.Strings(names)
			return names, nil
		}
		in.ExclusiveStartTableName = out.LastEvaluatedTableName
	}
}

// StreamNames returns, sorted, the names of the account's streams that
// start with opt.Prefix.
func StreamNames(ctx context.Context, api StreamCatalogAPI, opt CatalogOptions) ([]string, error) {
	in := &kinesis.ListStreamsInput{}
	if opt.PageSize > 0 {
		in.Limit = aws.Int32(opt.PageSize)
	}
	var names []string
	for {
		out, err := api.ListStreams(ctx, in)
		if err != nil {
			return nil, err
		}
		for _, n := range out.StreamNames {
			if strings.HasPrefix(n, opt.Prefix) {
				names = append(names, n)
			}
		}
		if !aws.ToBool(out.HasMoreStreams) || len(out.StreamNames) == 0 {
			break
		}
		// NextToken is the current API; ExclusiveStartStreamName the older
		// one that servers still accept. They may not be given together.
		if out.NextToken != nil {
			in = &kinesis.ListStreamsInput{NextToken: out.NextToken}
		} else {
			in.ExclusiveStartStreamName = aws.String(out.StreamNames[len(out.StreamNames)-1])
		}
	}
	sort.Strings(names)
	return names, nil
}

// LeaseName is what names one lease: its key, the shard and stream it is
// for, and who holds it.
type LeaseName struct {
	Key     string
	ShardID string // the raw shard id: the key itself in a single-stream table
	// StreamID is the multi-stream identifier "account:name:epoch", empty
	// in a single-stream table.
	StreamID string
	Owner    string
}

// StreamName is the stream's name part of the identifier ("" when single-stream).
func (n LeaseName) StreamName() string {
	if parts := strings.SplitN(n.StreamID, ":", 3); len(parts) == 3 {
		return parts[1]
	}
	return ""
}

// OfStream reports whether the lease belongs to the stream named by name
// or full identifier, as --stream names it; every lease of a single-stream
// table does.
func (n LeaseName) OfStream(stream string) bool {
	return stream == "" || n.StreamID == "" || n.StreamID == stream || n.StreamName() == stream
}

// leaseNameAttrs are the only attributes LeaseNames reads: a projection
// keeps a large table's scan to a few bytes per lease.
var leaseNameAttrs = []string{leasecore.AttrLeaseKey, leasecore.AttrLeaseOwner, leasecore.AttrShardID,
	leasecore.AttrStreamName, leasecore.AttrEntityType}

// LeaseNames scans the lease table for the names of its leases, sorted by
// key. KCL 3.x's non-lease items (leader lock, migration state, worker
// metrics) are skipped.
func LeaseNames(ctx context.Context, api leasecore.ScanAPI, table string) ([]LeaseName, error) {
	names := map[string]string{}
	var proj []string
	for i, a := range leaseNameAttrs {
		p := "#a" + string(rune('0'+i))
		names[p] = a
		proj = append(proj, p)
	}
	in := &dynamodb.ScanInput{
		TableName:                aws.String(table),
		ProjectionExpression:     aws.String(strings.Join(proj, ", ")),
		ExpressionAttributeNames: names,
		ReturnConsumedCapacity:   types.ReturnConsumedCapacityTotal,
	}
	var out []LeaseName
	for {
		page, err := api.Scan(ctx, in)
		if err != nil {
			return nil, err
		}
		for _, item := range page.Items {
			if n, ok := leaseNameOf(item); ok {
				out = append(out, n)
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// leaseNameOf derives the names the way the lease codec does: shardId and
// streamName when a multi-stream lease has them, otherwise the key split
// as KCL splits "account:stream:epoch:shardId".
func leaseNameOf(item map[string]types.AttributeValue) (LeaseName, bool) {
	key := leasecore.ItemKey(item)
	if key == "" || !leasecore.IsLeaseItem(item) {
		return LeaseName{}, false
	}
	l := leasecore.Lease{LeaseKey: key, LeaseOwner: stringAttr(item, leasecore.AttrLeaseOwner),
		ShardID: stringAttr(item, leasecore.AttrShardID), StreamName: stringAttr(item, leasecore.AttrStreamName)}
	n := LeaseName{Key: key, ShardID: l.ShardIDOrKey(), StreamID: l.StreamName, Owner: l.LeaseOwner}
	if n.StreamID == "" {
		n.StreamID, _, _ = leasecore.ParseMultiStreamKey(key)
	}
	return n, true
}

func stringAttr(item map[string]types.AttributeValue, name string) string {
	if s, ok := item[name].(*types.AttributeValueMemberS); ok && s != nil {
		return s.Value
	}
	return ""
}
