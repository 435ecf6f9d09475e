package leasecore

import (
	"context"
	"errors"
	"fmt"
	"github.com/kcltool/kcltool/internal/clock"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/awserr"
	"github.com/kcltool/kcltool/internal/backoff"
)

// ScanAPI is the part of the DynamoDB client a lease-table scan uses.
type ScanAPI interface {
	Scan(ctx context.Context, params *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// NonLeaseItem is an item of a lease table that is not a lease: a KCL 3.x
// leader lock, migration state or worker-metrics entry (docs/kcl-compat.md, KCL
// 3.x items).
type NonLeaseItem struct {
	Key        string `json:"leaseKey"`
	EntityType string `json:"entityType"`
	// Item is the raw item, for views that read the KCL 3.x entities.
	Item map[string]types.AttributeValue `json:"-"`
}

// ScanResult is one full read of a lease table.
type ScanResult struct {
	Leases    []Lease        // sorted by lease key
	NonLeases []NonLeaseItem // sorted by key
	Malformed []error        // one *MalformedError per lease item that did not decode
	// Items holds every item exactly as read, leases, non-leases and
	// malformed items alike, sorted by leaseKey; only with
	// ScanOptions.KeepItems. A lossless export needs the raw items: a
	// decoded lease re-encodes equal, but a malformed one has nothing else.
	Items   []map[string]types.AttributeValue
	Pages   int // Scan calls that returned data
	Retries int // throttled or transient pages that were retried
	// ReadUnits is the read capacity the scan consumed, as DynamoDB
	// answered it (ReturnConsumedCapacity), or estimated from the items'
	// sizes for pages answered without it.
	ReadUnits float64
}

// ScanOptions tunes ScanTable. The zero value scans with one segment.
type ScanOptions struct {
	// Segments is the number of parallel scan segments (1 when zero).
	Segments int
	// MaxRetries bounds how often one page is retried after throttling,
	// on top of the SDK's own retries (default 8).
	MaxRetries int
	// Sleep waits between retries; tests inject a fake. Defaults to a
	// context-aware timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// ConsistentRead asks for strongly consistent pages.
	ConsistentRead bool
	// PageSize caps the items per Scan call (DynamoDB's 1 MB page when zero).
	PageSize int32
	// KeepItems fills ScanResult.Items.
	KeepItems bool
	// Uncounted asks for no ConsumedCapacity and leaves ReadUnits zero,
	// for a one-off read that reports no units (leases ls). DynamoDB
	// answers the figure for free, but a local server (dynalite) sizes
	// every item a second time for it: about a fifth more of its time on
	// a large table (docs/benchmarks.md, leases ls at scale). The worker's
	// capacity metrics count their scans apart from this (meteredAPI).
	Uncounted bool
	// Pace, when set, is called after each page with the read units it
	// cost (as ReadUnits counts them) before the next page of the same
	// segment is asked for; it may wait, and its error ends the scan. The
	// KCL 3.x leader paces its scan with it (coordination/assignment).
	Pace func(ctx context.Context, units float64) error
	// OnRetry, when set, is told of each failed page that is retried, as
	// it happens (the taker's health, health.go: a scan that keeps
	// retrying is failing before it gives up). It may be called from
	// several segments at once.
	OnRetry func(err error)
}

// SegmentsFor picks a parallel-scan segment count for a table of the given
// size: one segment per MiB, between 1 and 16. Small lease tables (the vast
// majority) stay on one segment so a scan costs one request per MiB.
func SegmentsFor(sizeBytes int64) int {
	n := int(sizeBytes/(1<<20)) + 1
	return min(max(n, 1), 16)
}

// ScanTable reads every item of a lease table, paging through
// LastEvaluatedKey, optionally in parallel segments. Throttled pages are
// retried from the same key with exponential backoff and full jitter, so a
// large scan never restarts from the beginning.
func ScanTable(ctx context.Context, api ScanAPI, table string, opt ScanOptions) (ScanResult, error) {
	segments := max(opt.Segments, 1)
	if opt.MaxRetries == 0 {
		opt.MaxRetries = 8
	}
	if opt.Sleep == nil {
		opt.Sleep = func(ctx context.Context, d time.Duration) error { return clock.Sleep(ctx, clock.RealClock(), d) }
	}
	results := make([]segmentScan, segments)
	errs := make([]error, segments)
	var wg sync.WaitGroup
	for seg := range segments {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[seg], errs[seg] = scanSegment(ctx, api, table, seg, segments, opt)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return ScanResult{}, err
	}
	// Each segment came back sorted (scanSegment): merging them copies
	// every lease once, where appending and sorting the whole moved each
	// several times (a 100,000-lease table is some 40 MB of leases).
	var all ScanResult
	leases := make([]sortedRun[Lease], segments)
	nonLeases := make([]sortedRun[NonLeaseItem], segments)
	items := make([]sortedRun[map[string]types.AttributeValue], segments)
	for i, r := range results {
		leases[i], nonLeases[i], items[i] = r.leaseRun, r.nonLeaseRun, r.itemRun
		all.Malformed = append(all.Malformed, r.Malformed...)
		all.Pages += r.Pages
		all.Retries += r.Retries
		all.ReadUnits += r.ReadUnits
	}
	all.Leases, all.NonLeases, all.Items = mergeRuns(leases), mergeRuns(nonLeases), mergeRuns(items)
	return all, nil
}

// segmentScan is one segment's part of a scan, with its order by key.
type segmentScan struct {
	ScanResult
	leaseRun    sortedRun[Lease]
	nonLeaseRun sortedRun[NonLeaseItem]
	itemRun     sortedRun[map[string]types.AttributeValue]
}

func scanSegment(ctx context.Context, api ScanAPI, table string, seg, total int, opt ScanOptions) (segmentScan, error) {
	var res segmentScan
	in := &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(opt.ConsistentRead),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal}
	if opt.Uncounted {
		in.ReturnConsumedCapacity = types.ReturnConsumedCapacityNone
	}
	if total > 1 {
		in.Segment, in.TotalSegments = aws.Int32(int32(seg)), aws.Int32(int32(total))
	}
	if opt.PageSize > 0 {
		in.Limit = aws.Int32(opt.PageSize)
	}
	// The next page is asked for as soon as this one's LastEvaluatedKey
	// is known, and this one's items are decoded into leases meanwhile:
	// a page waits for the server either way, and a large table read in
	// one segment (DynamoDB's TableSizeBytes lags by hours; dynalite's
	// stays 0) spent a fifth of its time decoding between the pages.
	pages := make(chan *dynamodb.ScanOutput, 1)
	var (
		retries  int
		fetchErr error
	)
	go func() {
		defer close(pages)
		retries, fetchErr = fetchPages(ctx, api, in, opt, pages)
	}()
	for out := range pages {
		res.Pages++
		if !opt.Uncounted {
			res.ReadUnits += pageReadUnits(opt.ConsistentRead, out)
		}
		for _, item := range out.Items {
			res.add(item)
		}
		if opt.KeepItems {
			res.Items = append(res.Items, out.Items...)
		}
	}
	res.Retries = retries // written before pages was closed
	if fetchErr != nil {
		return res, fetchErr
	}
	// Sorted here, while the other segments may still be reading.
	res.leaseRun = sortRun(res.Leases, func(l *Lease) string { return l.LeaseKey })
	res.nonLeaseRun = sortRun(res.NonLeases, func(n *NonLeaseItem) string { return n.Key })
	res.itemRun = sortRun(res.Items, func(item *map[string]types.AttributeValue) string { return ItemKey(*item) })
	return res, nil
}

// fetchPages reads in's segment page by page into pages, retrying
// throttled and transient pages from their own key, and returns how many
// retries it made and the error that ended it early.
func fetchPages(ctx context.Context, api ScanAPI, in *dynamodb.ScanInput, opt ScanOptions, pages chan<- *dynamodb.ScanOutput) (retries int, err error) {
	attempt := 0
	for {
		out, err := api.Scan(ctx, in, fastScan)
		if err != nil {
			// A page cut off by its own deadline, or by a broken
			// connection, is retried like a throttled one: it is a read.
			if ctx.Err() != nil || !awserr.Transient(err) || attempt >= opt.MaxRetries {
				return retries, err
			}
			attempt++
			retries++
			if opt.OnRetry != nil {
				opt.OnRetry(err)
			}
			if err := opt.Sleep(ctx, backoff.Default(attempt)); err != nil {
				return retries, err
			}
			continue
		}
		attempt = 0
		pages <- out
		if len(out.LastEvaluatedKey) == 0 {
			return retries, nil
		}
		if opt.Pace != nil {
			if err := opt.Pace(ctx, pageReadUnits(opt.ConsistentRead, out)); err != nil {
				return retries, err
			}
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

func (r *ScanResult) add(item map[string]types.AttributeValue) {
	if !IsLeaseItem(item) {
		r.NonLeases = append(r.NonLeases, NonLeaseItem{Key: ItemKey(item), EntityType: EntityTypeOf(item), Item: item})
		return
	}
	l, err := DecodeLease(item)
	if err != nil {
		r.Malformed = append(r.Malformed, err)
		return
	}
	r.Leases = append(r.Leases, l)
}

// String names the item for warnings.
func (n NonLeaseItem) String() string { return fmt.Sprintf("%s (%s)", n.Key, n.EntityType) }
