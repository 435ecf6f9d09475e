package leasecore

import (
	"context"
	"fmt"
	"github.com/kcltool/kcltool/internal/backoff"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/awserr"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// seedScanTable writes n leases plus two KCL 3.5 non-lease items and one
// malformed lease, and returns the table name.
func seedScanTable(t *testing.T, c *dynamodb.Client, n int) string {
	t.Helper()
	table := emulator.Name(t, "scan")
	emulator.CreateLeaseTable(t, c, table)
	put := func(item map[string]types.AttributeValue) {
		if _, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		put(EncodeLease(Lease{LeaseKey: fmt.Sprintf("shardId-%012d", i), LeaseOwner: "w", LeaseCounter: int64(i),
			Checkpoint: SequenceNumber{SequenceNumber: TRIM_HORIZON}}))
	}
	put(map[string]types.AttributeValue{"leaseKey": &types.AttributeValueMemberS{Value: "Leader"}, "entityType": &types.AttributeValueMemberS{Value: "LEADER"}})
	put(map[string]types.AttributeValue{"leaseKey": &types.AttributeValueMemberS{Value: "Migration3.0"}, "entityType": &types.AttributeValueMemberS{Value: "CLIENT_VERSION_MIGRATION"}})
	put(map[string]types.AttributeValue{"leaseKey": &types.AttributeValueMemberS{Value: "broken"}, "checkpoint": &types.AttributeValueMemberS{Value: "LATEST"}})
	return table
}

func checkScan(t *testing.T, res ScanResult, n int) {
	t.Helper()
	if len(res.Leases) != n || len(res.NonLeases) != 2 || len(res.Malformed) != 1 {
		t.Fatalf("got %d leases, %d non-leases, %d malformed; want %d, 2, 1", len(res.Leases), len(res.NonLeases), len(res.Malformed), n)
	}
	for i, l := range res.Leases {
		if want := fmt.Sprintf("shardId-%012d", i); l.LeaseKey != want || l.LeaseCounter != int64(i) {
			t.Fatalf("lease %d = %s/%d, want %s/%d (sorted, each once)", i, l.LeaseKey, l.LeaseCounter, want, i)
		}
	}
}

// TestScanPagesAndSegments reads every item exactly once with small pages
// and with parallel segments, each kind of item sorted by key across the
// segments; Uncounted asks for no capacity.
func TestScanPagesAndSegments(t *testing.T) {
	c := emulator.DynamoDB(t)
	table := seedScanTable(t, c, 120)
	for _, segs := range []int{1, 4, 16} {
		res, err := ScanTable(context.Background(), c, table, ScanOptions{Segments: segs, PageSize: 7, KeepItems: true})
		if err != nil {
			t.Fatal(err)
		}
		checkScan(t, res, 120)
		if res.Pages < 120/7 {
			t.Errorf("segments=%d: %d pages; PageSize not applied", segs, res.Pages)
		}
		if res.NonLeases[0].Key != "Leader" || res.NonLeases[1].Key != "Migration3.0" {
			t.Errorf("segments=%d: non-leases %v, want sorted by key", segs, res.NonLeases)
		}
		if len(res.Items) != 123 {
			t.Fatalf("segments=%d: %d items kept, want 123", segs, len(res.Items))
		}
		for i := 1; i < len(res.Items); i++ {
			if ItemKey(res.Items[i-1]) >= ItemKey(res.Items[i]) {
				t.Fatalf("segments=%d: items %q before %q: not sorted by key", segs, ItemKey(res.Items[i-1]), ItemKey(res.Items[i]))
			}
		}
		if res.ReadUnits <= 0 {
			t.Errorf("segments=%d: ReadUnits %v, want the pages' units", segs, res.ReadUnits)
		}
		res, err = ScanTable(context.Background(), c, table, ScanOptions{Segments: segs, PageSize: 7, Uncounted: true})
		if err != nil {
			t.Fatal(err)
		}
		checkScan(t, res, 120)
		if res.ReadUnits != 0 || res.Items != nil {
			t.Errorf("segments=%d, uncounted: ReadUnits %v and %d items, want 0 and none kept", segs, res.ReadUnits, len(res.Items))
		}
	}
}

// TestScanRetriesThrottledPages puts a proxy that throttles 40% of Scans in
// front of dynalite: the scan completes with every item, resuming each
// throttled page from its own key, and counts the retries.
func TestScanRetriesThrottledPages(t *testing.T) {
	c := emulator.DynamoDB(t)
	table := seedScanTable(t, c, 60)
	proxy := emulator.NewFaultProxy(t, emulator.DynamoDBEndpoint(t), emulator.Throttle, 0.4, "Scan", 7)
	// The SDK's own retryer is off so that ScanTable's retries are the ones seen.
	throttled := dynamodb.NewFromConfig(emulator.Config(), func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(proxy.URL)
		o.Retryer = aws.NopRetryer{}
	})
	var (
		mu    sync.Mutex // both segments retry concurrently
		slept []time.Duration
	)
	res, err := ScanTable(context.Background(), throttled, table, ScanOptions{
		Segments: 2, PageSize: 5, MaxRetries: 50,
		Sleep: func(_ context.Context, d time.Duration) error {
			mu.Lock()
			defer mu.Unlock()
			slept = append(slept, d)
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	checkScan(t, res, 60)
	if res.Retries == 0 || int64(res.Retries) != proxy.Injected.Load() {
		t.Errorf("retries %d, injected faults %d", res.Retries, proxy.Injected.Load())
	}
	if len(slept) != res.Retries {
		t.Errorf("slept %d times for %d retries", len(slept), res.Retries)
	}
	for _, d := range slept {
		if d <= 0 || d > 5*time.Second {
			t.Errorf("backoff %s outside (0, 5s]", d)
		}
	}
}

// TestScanGivesUpAfterMaxRetries returns the throttling error instead of
// looping forever.
func TestScanGivesUpAfterMaxRetries(t *testing.T) {
	c := emulator.DynamoDB(t)
	table := seedScanTable(t, c, 3)
	proxy := emulator.NewFaultProxy(t, emulator.DynamoDBEndpoint(t), emulator.Throttle, 1, "Scan", 1)
	throttled := dynamodb.NewFromConfig(emulator.Config(), func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(proxy.URL)
		o.Retryer = aws.NopRetryer{}
	})
	_, err := ScanTable(context.Background(), throttled, table, ScanOptions{MaxRetries: 3,
		Sleep: func(context.Context, time.Duration) error { return nil }})
	if err == nil || !awserr.Retryable(err) {
		t.Fatalf("want the throttling error, got %v", err)
	}
	if got := proxy.Injected.Load(); got != 4 {
		t.Errorf("%d attempts, want 1 + 3 retries", got)
	}
}

func TestBackoffGrowsAndIsCapped(t *testing.T) {
	for attempt := 1; attempt < 20; attempt++ {
		ceiling := min(50*time.Millisecond<<min(attempt, 10), 5*time.Second)
		for range 50 {
			if d := backoff.Default(attempt); d <= 0 || d > ceiling {
				t.Fatalf("Backoff(%d) = %s, want (0, %s]", attempt, d, ceiling)
			}
		}
	}
}

func TestSegmentsFor(t *testing.T) {
	for _, c := range []struct {
		size int64
		want int
	}{{0, 1}, {900 << 10, 1}, {3 << 20, 4}, {1 << 40, 16}} {
		if got := SegmentsFor(c.size); got != c.want {
			t.Errorf("SegmentsFor(%d) = %d, want %d", c.size, got, c.want)
		}
	}
}
