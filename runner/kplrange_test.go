package runner

import (
	"context"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/internal/testenv/kpltest"
	"github.com/kcltool/kcltool/leasecore"
)

// The first hash key of shard 1 in a stream of two shards: 2^127.
var secondHalf = new(big.Int).Lsh(big.NewInt(1), 127)

// seedOldLeases writes TRIM_HORIZON leases without startingHashKey and
// endingHashKey, as KCL versions before 2.3 create them.
func seedOldLeases(t *testing.T, s stack, shardIDs ...string) {
	t.Helper()
	emulator.CreateLeaseTable(t, s.ddb, s.table)
	for _, id := range shardIDs {
		if _, err := leasecore.CreateLease(context.Background(), s.ddb, s.table, leasecore.Lease{
			LeaseKey: id, Checkpoint: leasecore.SequenceNumber{SequenceNumber: leasecore.TRIM_HORIZON},
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// putAggregate puts one KPL aggregate, routed by routeKey (an explicit
// hash key), holding recs.
func putAggregate(t *testing.T, s stack, routeKey *big.Int, recs ...kpltest.Record) {
	t.Helper()
	if _, err := s.kin.PutRecord(context.Background(), &kinesis.PutRecordInput{
		StreamName: aws.String(s.stream), PartitionKey: aws.String("agg"), ExplicitHashKey: aws.String(routeKey.String()),
		Data: kpltest.Aggregate(recs...),
	}); err != nil {
		t.Fatal(err)
	}
}

// putKPLMix puts on shard 0 an aggregate wholly in its range, one with a
// sub-record of shard 1's range (as a reshard leaves them, delivered to
// both shards), and a last plain record; on shard 1 an aggregate of its own.
func putKPLMix(t *testing.T, s stack) {
	t.Helper()
	inRange := func(n int64) string { return big.NewInt(n).String() }
	putAggregate(t, s, big.NewInt(0),
		kpltest.Record{PartitionKey: "a", ExplicitHashKey: inRange(1), Data: []byte("in0:1")},
		kpltest.Record{PartitionKey: "b", ExplicitHashKey: inRange(2), Data: []byte("in0:2")})
	putAggregate(t, s, big.NewInt(0),
		kpltest.Record{PartitionKey: "c", ExplicitHashKey: inRange(3), Data: []byte("misrouted:1")},
		kpltest.Record{PartitionKey: "d", ExplicitHashKey: new(big.Int).Add(secondHalf, big.NewInt(5)).String(), Data: []byte("misrouted:2")})
	putAggregate(t, s, secondHalf,
		kpltest.Record{PartitionKey: "e", ExplicitHashKey: new(big.Int).Add(secondHalf, big.NewInt(9)).String(), Data: []byte("in1:1")})
	if _, err := s.kin.PutRecord(context.Background(), &kinesis.PutRecordInput{
		StreamName: aws.String(s.stream), PartitionKey: aws.String("end"), ExplicitHashKey: aws.String("7"), Data: []byte("end0"),
	}); err != nil {
		t.Fatal(err)
	}
}

// checkKPLMixFiltered waits for shard 0's last record and shard 1's
// aggregate, then checks that the aggregate with a sub-record outside
// shard 0's range was dropped whole, as KCL's ProcessTask drops it.
func checkKPLMixFiltered(t *testing.T, out string) {
	t.Helper()
	texts := func() string {
		var b strings.Builder
		for _, h := range readHandled(t, out) {
			b.WriteString(h.text() + " ")
		}
		return b.String()
	}
	eventually(t, 30*time.Second, "both shards' records", func() bool {
		got := texts()
		return strings.Contains(got, "end0") && strings.Contains(got, "in1:1")
	})
	if got, want := texts(), "in0:1 in0:2 "; !strings.Contains(got, want) {
		t.Errorf("handled %q, want shard 0's own aggregate %q", got, want)
	}
	if got := texts(); strings.Contains(got, "misrouted") {
		t.Errorf("handled %q: the aggregate with a sub-record of shard 1's range was handed over on shard 0", got)
	}
}

// Leases without hash keys (KCL < 2.3) still filter KPL aggregates: the
// range comes from the shard listing, not the lease. Before, such a lease
// filtered nothing and the misrouted aggregate was handled.
func TestKPLFilterUsesListedRangeForLeaseWithoutHashKeys(t *testing.T) {
	s := newStack(t, 2)
	seedOldLeases(t, s, "shardId-000000000000", "shardId-000000000001")
	putKPLMix(t, s)
	out := outFile(t)
	start(t, s, s.config(t, "w1", out))
	checkKPLMixFiltered(t, out)
	for key, l := range leases(t, s) {
		if l.StartingHashKey != "" || l.EndingHashKey != "" {
			t.Errorf("lease %s was given hash keys %q..%q; the table is left as the old KCL wrote it", key, l.StartingHashKey, l.EndingHashKey)
		}
	}
}

// With the listing failing from the start, nothing is handed over
// unfiltered: the reading waits until the shard's range is known, as KCL's
// task fails while its shard detector cannot list.
func TestKPLFilterWaitsForAFailedListing(t *testing.T) {
	s := newStack(t, 2)
	seedOldLeases(t, s, "shardId-000000000000", "shardId-000000000001")
	putKPLMix(t, s)
	proxy, kin := shardProxy(t)
	proxy.SetListShardsError("AccessDeniedException")
	out := outFile(t)
	startVia(t, s, kin, s.config(t, "w1", out))
	eventually(t, 20*time.Second, "the worker to hold both leases", func() bool {
		ls := leases(t, s)
		return ls["shardId-000000000000"].LeaseOwner == "w1" && ls["shardId-000000000001"].LeaseOwner == "w1"
	})
	eventually(t, 10*time.Second, "listings refused", func() bool { return proxy.Injected("ListShards") >= 3 })
	if got := readHandled(t, out); len(got) > 0 {
		t.Fatalf("%d records handled while the shards' ranges were unknown", len(got))
	}
	proxy.SetListShardsError("")
	checkKPLMixFiltered(t, out)
}

// The fan-out reader filters with the same range: a lease without hash keys
// read over SubscribeToShard drops the misrouted aggregate too.
func TestKPLFilterUsesListedRangeWithFanOut(t *testing.T) {
	s := newStack(t, 2)
	seedOldLeases(t, s, "shardId-000000000000", "shardId-000000000001")
	putKPLMix(t, s)
	out := outFile(t)
	cfg := s.config(t, "w1", out)
	cfg.FanOut = fanOut(t, 0)
	start(t, s, cfg)
	checkKPLMixFiltered(t, out)
}
