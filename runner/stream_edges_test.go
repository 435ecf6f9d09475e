package runner

import (
	"fmt"
	"math/big"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/reshard"
)

// shardProxy puts a shard fault proxy between the worker and kinesis-local;
// the test's own client (s.kin) still goes direct.
func shardProxy(t *testing.T) (*emulator.ShardFaultProxy, *kinesis.Client) {
	t.Helper()
	p := emulator.NewShardFaultProxy(t, emulator.KinesisEndpoint(t))
	return p, kinesis.NewFromConfig(emulator.Config(), func(o *kinesis.Options) { o.BaseEndpoint = aws.String(p.URL) })
}

// startVia starts a worker whose Kinesis calls go through kin.
func startVia(t *testing.T, s stack, kin *kinesis.Client, cfg Config) *running {
	t.Helper()
	proxied := s
	proxied.kin = kin
	return start(t, proxied, cfg)
}

// A shard whose last page comes without ChildShards, while the shard
// listing fails, is not finished: SHARD_END waits until the children are
// known and their leases exist, then the children are read.
func TestShardEndWaitsForUnknownChildren(t *testing.T) {
	s := newStack(t, 1)
	proxy, kin := shardProxy(t)
	out := outFile(t)
	cfg := s.config(t, "w1", out)
	emulator.CreateLeaseTable(t, s.ddb, s.table)
	startVia(t, s, kin, cfg)
	const parent = "shardId-000000000000"
	eventually(t, 20*time.Second, "the worker to hold the lease", func() bool { return leases(t, s)[parent].LeaseOwner == "w1" })

	s.put(t, func(k string) string { return k + ":0" }, keys("k", 20)...)
	proxy.SetStripChildShards(true)
	// Not retried by the listing itself: a role without kinesis:ListShards.
	proxy.SetListShardsError("AccessDeniedException")
	emulator.SplitShard(t, s.kin, s.stream, parent, new(big.Int).Lsh(big.NewInt(1), 126))
	s.put(t, func(k string) string { return k + ":1" }, keys("k", 20)...)

	eventually(t, 30*time.Second, "the parent's 20 records", func() bool { return len(readHandled(t, out)) >= 20 })
	eventually(t, 10*time.Second, "a last page without ChildShards", func() bool { return proxy.Stripped.Load() > 0 })
	// Room for a premature SHARD_END to land.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if l := leases(t, s)[parent]; l.Checkpoint.IsShardEnd() {
			t.Fatalf("SHARD_END written while the children are unknown (childShardIds %v, leases %v)", l.ChildShardIDs, slices.Collect(mapKeys(leases(t, s))))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if proxy.Injected("ListShards") == 0 {
		t.Fatal("the shard listing was never tried")
	}

	proxy.SetListShardsError("")
	eventually(t, 30*time.Second, "the parent at SHARD_END", func() bool {
		ls := leases(t, s)
		if !ls[parent].Checkpoint.IsShardEnd() {
			return false
		}
		for _, c := range []string{"shardId-000000000001", "shardId-000000000002"} {
			if _, ok := ls[c]; !ok {
				t.Fatalf("parent at SHARD_END but child %s has no lease", c)
			}
		}
		return true
	})
	if got := slices.Sorted(slices.Values(leases(t, s)[parent].ChildShardIDs)); fmt.Sprint(got) != "[shardId-000000000001 shardId-000000000002]" {
		t.Errorf("parent childShardIds %v", got)
	}
	eventually(t, 30*time.Second, "the children's 20 records", func() bool { return len(readHandled(t, out)) >= 40 })
	checkExactlyOnceInOrder(t, readHandled(t, out), 20, 2)
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// A parent whose data expired (Kinesis answers ResourceNotFound for it) is
// finished at SHARD_END instead of being retried for ever: its children get
// leases at TRIM_HORIZON and are read, and the parent and children carry
// the marks doctor reports.
func TestExpiredParentIsFinishedAndChildrenStart(t *testing.T) {
	s := newStack(t, 1)
	proxy, kin := shardProxy(t)
	out := outFile(t)
	const parent = "shardId-000000000000"
	// The parent's records expire unread; the children's are read.
	s.put(t, func(k string) string { return k + ":0" }, keys("parent", 10)...)
	emulator.SplitShard(t, s.kin, s.stream, parent, new(big.Int).Lsh(big.NewInt(1), 126))
	s.put(t, func(k string) string { return k + ":0" }, keys("k", 20)...)
	proxy.SetShardGone(parent, true)

	cfg := s.config(t, "w1", out)
	cfg.CleanupInterval = time.Hour // keep the finished parent to look at
	startVia(t, s, kin, cfg)
	eventually(t, 30*time.Second, "the children's 20 records", func() bool { return len(readHandled(t, out)) >= 20 })
	checkExactlyOnceInOrder(t, readHandled(t, out), 20, 1)
	if proxy.Injected("GetShardIterator") == 0 {
		t.Fatal("the parent was never read")
	}

	eventually(t, 10*time.Second, "the parent at SHARD_END", func() bool { return leases(t, s)[parent].Checkpoint.IsShardEnd() })
	ls := leases(t, s)
	p := ls[parent]
	if _, ok := p.Extra[reshard.AttrExpired]; !ok {
		t.Errorf("parent lease without %s: %v", reshard.AttrExpired, p.Extra)
	}
	if got := slices.Sorted(slices.Values(p.ChildShardIDs)); fmt.Sprint(got) != "[shardId-000000000001 shardId-000000000002]" {
		t.Errorf("parent childShardIds %v", got)
	}
	for _, c := range []string{"shardId-000000000001", "shardId-000000000002"} {
		l, ok := ls[c]
		if !ok {
			t.Fatalf("no lease for child %s", c)
		}
		mark, _ := l.Extra[reshard.AttrParentExpired].(*ddbtypes.AttributeValueMemberS)
		if mark == nil || !strings.HasPrefix(mark.Value, parent+" ") {
			t.Errorf("child %s: %s = %v, want it to name %s", c, reshard.AttrParentExpired, l.Extra[reshard.AttrParentExpired], parent)
		}
		if fmt.Sprint(l.ParentShardIDs) != "["+parent+"]" {
			t.Errorf("child %s parentShardId %v", c, l.ParentShardIDs)
		}
	}
}

// The same when the shard expires while it is being read: GetRecords
// answers ResourceNotFound. What was read before is still handled and
// checkpointed; then the shard is finished and the children start.
func TestShardExpiringWhileReadIsFinished(t *testing.T) {
	s := newStack(t, 1)
	proxy, kin := shardProxy(t)
	out := outFile(t)
	const parent = "shardId-000000000000"
	s.put(t, func(k string) string { return k + ":0" }, keys("p", 10)...)
	emulator.SplitShard(t, s.kin, s.stream, parent, new(big.Int).Lsh(big.NewInt(1), 126))
	s.put(t, func(k string) string { return k + ":0" }, keys("k", 20)...)

	// The first batch waits for the go-ahead file, so that the shard
	// expires while the reader is in the middle of it.
	cfg := s.config(t, "w1", out, "sh", "-c", `while [ ! -f "$OUT.go" ]; do sleep 0.05; done; cat >> "$OUT"`)
	cfg.MaxRecords, cfg.BatchSize = 2, 2
	cfg.CleanupInterval = time.Hour // keep the finished parent to look at
	startVia(t, s, kin, cfg)
	eventually(t, 20*time.Second, "the parent's first page", func() bool {
		return proxy.Injected("GetRecords") == 0 && len(leasesIfTable(t, s)) > 0 && leasesIfTable(t, s)[parent].LeaseOwner == "w1"
	})
	time.Sleep(500 * time.Millisecond) // the reader reads ahead one page, then waits
	proxy.SetShardGone(parent, true)
	if err := os.WriteFile(out+".go", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the children's 20 records", func() bool {
		n := 0
		for _, h := range readHandled(t, out) {
			if strings.HasPrefix(h.text(), "k") {
				n++
			}
		}
		return n == 20
	})
	if proxy.Injected("GetRecords") == 0 {
		t.Fatal("GetRecords never answered ResourceNotFound")
	}
	parentHandled := 0
	for _, h := range readHandled(t, out) {
		if strings.HasPrefix(h.text(), "p") {
			parentHandled++
		}
	}
	if parentHandled == 0 || parentHandled == 10 {
		t.Fatalf("%d of the parent's records handled; want those read before it expired, not none or all", parentHandled)
	}
	eventually(t, 10*time.Second, "the parent at SHARD_END", func() bool { return leases(t, s)[parent].Checkpoint.IsShardEnd() })
	if _, ok := leases(t, s)[parent].Extra[reshard.AttrExpired]; !ok {
		t.Errorf("parent lease without %s", reshard.AttrExpired)
	}
}
