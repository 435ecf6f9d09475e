package leasecore

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/testenv/testfixtures"
)

// fixtureDir is the repository's testdata/kcl: lease items exactly as the
// Java KCL writes them.
func fixtureDir(tb testing.TB) string { return testfixtures.Dir(tb) }

// loadFixture reads a fixture file: a single item for .json, one item per
// non-empty line for .jsonl.
func loadFixture(tb testing.TB, name string) []map[string]types.AttributeValue {
	tb.Helper()
	var items []map[string]types.AttributeValue
	for i, raw := range fixtureDocs(tb, name) {
		item, err := UnmarshalItemJSON(raw)
		if err != nil {
			tb.Fatalf("%s item %d: %v", name, i+1, err)
		}
		items = append(items, item)
	}
	return items
}

// fixtureDocs returns the raw JSON documents of a fixture file.
func fixtureDocs(tb testing.TB, name string) [][]byte {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(fixtureDir(tb), name))
	if err != nil {
		tb.Fatalf("reading fixture: %v", err)
	}
	if !strings.HasSuffix(name, ".jsonl") {
		return [][]byte{data}
	}
	var docs [][]byte
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) > 0 {
			docs = append(docs, line)
		}
	}
	return docs
}

func loadLeaseFixture(t *testing.T, name string) (map[string]types.AttributeValue, Lease) {
	t.Helper()
	items := loadFixture(t, name)
	if len(items) != 1 {
		t.Fatalf("%s: want 1 item, got %d", name, len(items))
	}
	l, err := DecodeLease(items[0])
	if err != nil {
		t.Fatalf("%s: DecodeLease: %v", name, err)
	}
	return items[0], l
}

var leaseFixtures = []string{
	"f1-kcl2-active.json",
	"f2-kcl35-active.json",
	"f2b-kcl3-handoff.json",
	"f3-shard-end-parent.json",
	"f4-child-waiting.json",
	"f5-multistream.json",
}

// TestFixturesListed makes sure a fixture added to testdata/kcl is not
// silently left out of the round-trip tests.
func TestFixturesListed(t *testing.T) {
	entries, err := os.ReadDir(fixtureDir(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		n := e.Name()
		if strings.HasSuffix(n, ".json") && !slices.Contains(leaseFixtures, n) {
			t.Errorf("fixture %s is not covered by leaseFixtures", n)
		}
	}
}

// TestFixtureRoundTrip: decode, encode, and the item must come back
// attribute for attribute as KCL wrote it, also through DynamoDB JSON.
func TestFixtureRoundTrip(t *testing.T) {
	for _, name := range leaseFixtures {
		t.Run(name, func(t *testing.T) {
			item, l := loadLeaseFixture(t, name)
			enc := EncodeLease(l)
			diffItems(t, item, enc)

			js, err := MarshalItemJSON(enc)
			if err != nil {
				t.Fatalf("MarshalItemJSON: %v", err)
			}
			back, err := UnmarshalItemJSON(js)
			if err != nil {
				t.Fatalf("UnmarshalItemJSON(MarshalItemJSON): %v\n%s", err, js)
			}
			diffItems(t, item, back)

			l2, err := DecodeLease(enc)
			if err != nil {
				t.Fatalf("DecodeLease(EncodeLease): %v", err)
			}
			if !reflect.DeepEqual(l, l2) {
				t.Errorf("lease changed across encode/decode:\n got %+v\nwant %+v", l2, l)
			}
		})
	}
}

// diffItems compares two items attribute by attribute. Sets are compared
// as sorted lists: DynamoDB does not keep set order.
func diffItems(t *testing.T, want, got map[string]types.AttributeValue) {
	t.Helper()
	for _, name := range sortedAttrNames(want) {
		g, ok := got[name]
		if !ok {
			t.Errorf("attribute %s: missing, want %s", name, showAV(want[name]))
			continue
		}
		if !avEqual(want[name], g) {
			t.Errorf("attribute %s: got %s, want %s", name, showAV(g), showAV(want[name]))
		}
	}
	for _, name := range sortedAttrNames(got) {
		if _, ok := want[name]; !ok {
			t.Errorf("attribute %s: unexpected, got %s", name, showAV(got[name]))
		}
	}
}

func avEqual(a, b types.AttributeValue) bool {
	if sa, ok := a.(*types.AttributeValueMemberSS); ok {
		sb, ok := b.(*types.AttributeValueMemberSS)
		return ok && reflect.DeepEqual(sortedCopy(sa.Value), sortedCopy(sb.Value))
	}
	if na, ok := a.(*types.AttributeValueMemberNS); ok {
		nb, ok := b.(*types.AttributeValueMemberNS)
		return ok && reflect.DeepEqual(sortedCopy(na.Value), sortedCopy(nb.Value))
	}
	return reflect.DeepEqual(a, b)
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

func sortedAttrNames(item map[string]types.AttributeValue) []string {
	names := make([]string, 0, len(item))
	for n := range item {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// showAV renders one value as DynamoDB JSON for failure messages.
func showAV(av types.AttributeValue) string {
	v, err := attributeToJSON(av)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func ptr[T any](v T) *T { return &v }

// TestFixtureFields pins the decoded values, so a codec that round-trips by
// accident (say, everything into Extra) still fails.
func TestFixtureFields(t *testing.T) {
	const seq = "49590338271490256608559692538361571095921575989136588898"
	shard1Start, shard1End := "170141183460469231731687303715884105728", "340282366920938463463374607431768211455"
	tests := []struct {
		file string
		want Lease
	}{
		{"f1-kcl2-active.json", Lease{
			LeaseKey: "shardId-000000000001", LeaseOwner: "worker-a", LeaseCounter: 1542,
			Checkpoint:      SequenceNumber{SequenceNumber: seq},
			StartingHashKey: shard1Start, EndingHashKey: shard1End,
		}},
		{"f2-kcl35-active.json", Lease{
			LeaseKey: "shardId-000000000001", LeaseOwner: "worker-b", LeaseCounter: 877,
			Checkpoint:      SequenceNumber{SequenceNumber: seq, SubSequenceNumber: 3},
			StartingHashKey: shard1Start, EndingHashKey: shard1End,
			ThroughputKBps: ptr(12.345678), EntityType: "LEASE",
		}},
		{"f2b-kcl3-handoff.json", Lease{
			LeaseKey: "shardId-000000000001", LeaseOwner: "worker-c", CheckpointOwner: "worker-b", LeaseCounter: 877,
			Checkpoint:      SequenceNumber{SequenceNumber: seq, SubSequenceNumber: 3},
			StartingHashKey: shard1Start, EndingHashKey: shard1End,
			ThroughputKBps: ptr(12.345678), EntityType: "LEASE",
		}},
		{"f3-shard-end-parent.json", Lease{
			LeaseKey: "shardId-000000000000", LeaseOwner: "worker-a", LeaseCounter: 2011,
			Checkpoint:      SequenceNumber{SequenceNumber: SHARD_END},
			ChildShardIDs:   []string{"shardId-000000000002", "shardId-000000000003"},
			StartingHashKey: "0", EndingHashKey: "170141183460469231731687303715884105727",
		}},
		{"f4-child-waiting.json", Lease{
			LeaseKey: "shardId-000000000002", LeaseCounter: 0,
			Checkpoint:      SequenceNumber{SequenceNumber: TRIM_HORIZON},
			ParentShardIDs:  []string{"shardId-000000000000"},
			StartingHashKey: "0", EndingHashKey: "85070591730234615865843651857942052863",
			EntityType: "LEASE",
		}},
		{"f5-multistream.json", Lease{
			LeaseKey:   "123456789012:orders:1700000000:shardId-000000000007",
			StreamName: "123456789012:orders:1700000000", ShardID: "shardId-000000000007",
			LeaseOwner: "worker-c", LeaseCounter: 64, OwnerSwitchesSinceCheckpoint: 1,
			Checkpoint:      SequenceNumber{SequenceNumber: LATEST},
			ParentShardIDs:  []string{"shardId-000000000003"},
			StartingHashKey: "85070591730234615865843651857942052864", EndingHashKey: "170141183460469231731687303715884105727",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, got := loadLeaseFixture(t, tt.file)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("decoded\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}

	t.Run("derived", func(t *testing.T) {
		_, f3 := loadLeaseFixture(t, "f3-shard-end-parent.json")
		if !f3.Checkpoint.IsShardEnd() {
			t.Errorf("f3 checkpoint %v: IsShardEnd false", f3.Checkpoint)
		}
		_, f4 := loadLeaseFixture(t, "f4-child-waiting.json")
		if got, want := f4.ParentLeaseKeys(), []string{"shardId-000000000000"}; !reflect.DeepEqual(got, want) {
			t.Errorf("f4 ParentLeaseKeys = %q, want %q", got, want)
		}
		if got := f4.ShardIDOrKey(); got != "shardId-000000000002" {
			t.Errorf("f4 ShardIDOrKey = %q", got)
		}
		_, f5 := loadLeaseFixture(t, "f5-multistream.json")
		if got := f5.ShardIDOrKey(); got != "shardId-000000000007" {
			t.Errorf("f5 ShardIDOrKey = %q", got)
		}
		want := []string{"123456789012:orders:1700000000:shardId-000000000003"}
		if got := f5.ParentLeaseKeys(); !reflect.DeepEqual(got, want) {
			t.Errorf("f5 ParentLeaseKeys = %q, want %q", got, want)
		}
		stream, shard, ok := ParseMultiStreamKey(f5.LeaseKey)
		if !ok || stream != f5.StreamName || shard != f5.ShardID {
			t.Errorf("ParseMultiStreamKey(%q) = %q, %q, %v; want the streamName and shardId attributes", f5.LeaseKey, stream, shard, ok)
		}
	})
}

// TestFixtureNonLease: the KCL 3.5 single-table entities are not leases;
// listers must skip them by IsLeaseItem, and DecodeLease refuses them with
// a NotLeaseError rather than a bogus lease or a "malformed" warning.
func TestFixtureNonLease(t *testing.T) {
	items := loadFixture(t, "f6-kcl35-non-lease.jsonl")
	want := []struct{ key, entity string }{
		{"Leader", "LEADER"},
		{"Migration3.0", "CLIENT_VERSION_MIGRATION"},
		{"worker-b", "WORKER_METRIC_STATS"},
	}
	if len(items) != len(want) {
		t.Fatalf("want %d items, got %d", len(want), len(items))
	}
	for i, item := range items {
		if IsLeaseItem(item) {
			t.Errorf("item %d (%s): IsLeaseItem true", i+1, ItemKey(item))
		}
		if got := ItemKey(item); got != want[i].key {
			t.Errorf("item %d: ItemKey = %q, want %q", i+1, got, want[i].key)
		}
		if got := EntityTypeOf(item); got != want[i].entity {
			t.Errorf("item %d: EntityTypeOf = %q, want %q", i+1, got, want[i].entity)
		}
		_, err := DecodeLease(item)
		var nl *NotLeaseError
		if !errors.As(err, &nl) || nl.LeaseKey != want[i].key || nl.EntityType != want[i].entity {
			t.Errorf("item %d: DecodeLease error = %v, want *NotLeaseError for %s", i+1, err, want[i].key)
		}
		// Non-lease items still survive the JSON layer untouched (export).
		js, err := MarshalItemJSON(item)
		if err != nil {
			t.Fatalf("item %d: MarshalItemJSON: %v", i+1, err)
		}
		back, err := UnmarshalItemJSON(js)
		if err != nil {
			t.Fatalf("item %d: UnmarshalItemJSON: %v", i+1, err)
		}
		diffItems(t, item, back)
	}
	for _, name := range leaseFixtures {
		if item := loadFixture(t, name)[0]; !IsLeaseItem(item) {
			t.Errorf("%s: IsLeaseItem false", name)
		}
	}
}
