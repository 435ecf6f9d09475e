package kcl3fleet

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/leasecore"
)

// segmentResolver is LeaseTableScanSegmentResolver (leases/dynamodb/,
// v3.5.1): one segment per 0.2 GB of table (TableSizeBytes from
// DescribeTable), between 1 and 32, cached for two hours; 10 when the
// table cannot be described.
type segmentResolver struct {
	mu      sync.Mutex
	n       int
	expires time.Time
}

func (r *segmentResolver) resolve(ctx context.Context, l *Leader) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := l.clock.Now()
	if r.n > 0 && now.Before(r.expires) {
		return r.n
	}
	n := 10
	if r.n > 0 {
		n = r.n
	}
	if d, ok := l.f.DDB.(interface {
		DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	}); ok {
		if out, err := d.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(l.f.Tables.Lease)}); err == nil && out.Table != nil {
			gb := float64(aws.ToInt64(out.Table.TableSizeBytes)) / (1 << 30)
			n = min(max(int(math.Ceil(gb/0.2)), 1), 32)
		}
	}
	r.n, r.expires = n, now.Add(2*time.Hour)
	return n
}

// scanLeases is the leader's read of the lease table: listLeasesParallely
// (DynamoDBLeaseRefresher, v3.5.1 lines 554-646), each segment scanned to
// its end, eventually consistent (the ScanRequest sets no consistentRead),
// coordination items skipped. The audit (listLeases) reads the same way.
func (l *Leader) scanLeases(ctx context.Context) ([]leasecore.Lease, error) {
	total := l.segments.resolve(ctx, l)
	var out []leasecore.Lease
	for seg := 0; seg < total; seg++ {
		var start map[string]ddbtypes.AttributeValue
		for {
			in := &dynamodb.ScanInput{TableName: aws.String(l.f.Tables.Lease), ExclusiveStartKey: start}
			if total > 1 {
				in.Segment, in.TotalSegments = aws.Int32(int32(seg)), aws.Int32(int32(total))
			}
			page, err := l.f.DDB.Scan(ctx, in)
			if err != nil {
				return nil, fmt.Errorf("scan %s: %w", l.f.Tables.Lease, err)
			}
			for _, item := range page.Items {
				if !leasecore.IsLeaseItem(item) {
					continue
				}
				ls, err := leasecore.DecodeLease(item)
				if err != nil {
					return nil, err
				}
				out = append(out, ls)
			}
			if len(page.LastEvaluatedKey) == 0 {
				break
			}
			start = page.LastEvaluatedKey
		}
	}
	return out, nil
}
