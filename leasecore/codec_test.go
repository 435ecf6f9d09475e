package leasecore

import (
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func s(v string) types.AttributeValue     { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue     { return &types.AttributeValueMemberN{Value: v} }
func ss(v ...string) types.AttributeValue { return &types.AttributeValueMemberSS{Value: v} }

// baseItem is a minimal valid lease item (what KCL always writes).
func baseItem() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		AttrLeaseKey:                     s("shardId-000000000001"),
		AttrLeaseCounter:                 n("1542"),
		AttrOwnerSwitchesSinceCheckpoint: n("0"),
		AttrCheckpoint:                   s(TRIM_HORIZON),
		AttrCheckpointSubSequenceNumber:  n("0"),
	}
}

func withAttrs(set map[string]types.AttributeValue, del ...string) map[string]types.AttributeValue {
	item := baseItem()
	maps.Copy(item, set)
	for _, d := range del {
		delete(item, d)
	}
	return item
}

func TestParseDynamoInt(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr string
	}{
		{"0", 0, ""},
		{"-0", 0, ""},
		{"1542", 1542, ""},
		{"1e3", 1000, ""},
		{"1E+2", 100, ""},
		{"12.0", 12, ""},
		{"1.0E7", 10000000, ""},
		{"-1.0E7", -10000000, ""},
		{"100e-2", 1, ""},
		{".5e1", 5, ""},
		{"5.", 5, ""},
		{"+5", 5, ""},
		{"00012", 12, ""},
		{"0.000", 0, ""},
		{"0e99999999999999999999", 0, ""},
		{"9223372036854775807", 9223372036854775807, ""},
		{"-9223372036854775808", -9223372036854775808, ""},
		{"9.223372036854775807E18", 9223372036854775807, ""},
		// Beyond float64's 53 bits: must stay exact.
		{"1234567890123456789.0", 1234567890123456789, ""},
		{"1.234567890123456789e18", 1234567890123456789, ""},
		{"9223372036854775808", 0, "out of int64 range"},
		{"1e19", 0, "out of int64 range"},
		{"1e999999999999999999999", 0, "out of int64 range"},
		{"1.5", 0, "not an integer"},
		{"1e-3", 0, "not an integer"},
		{"1e-999999999999999999999", 0, "not an integer"},
		{"abc", 0, "not a number"},
		{"", 0, "not a number"},
		{" 1", 0, "not a number"},
		{"1 ", 0, "not a number"},
		{"NaN", 0, "not a number"},
		{"Infinity", 0, "not a number"},
		{"0x10", 0, "not a number"},
		{"1_000", 0, "not a number"},
		{"1e", 0, "not a number"},
		{".", 0, "not a number"},
		{"--1", 0, "not a number"},
	}
	for _, tt := range tests {
		got, err := parseDynamoInt(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parseDynamoInt(%q) = %d, %v; want error containing %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parseDynamoInt(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

func TestDynamoFloat(t *testing.T) {
	tests := []struct {
		in, format string // format: how EncodeLease writes it back
		wantErr    bool
	}{
		{"12.345678", "12.345678", false},
		{"1.0E7", "10000000", false},
		{"0", "0", false},
		{"0.1", "0.1", false},
		{"-2.5", "-2.5", false},
		{"123456.123457", "123456.123457", false},
		{"1e-400", "0", false}, // underflow is a value, not an error
		{"1e400", "", true},
		{"NaN", "", true},
		{"Inf", "", true},
		{"0x1p-2", "", true},
		{"", "", true},
	}
	for _, tt := range tests {
		f, err := parseDynamoFloat(tt.in)
		if tt.wantErr {
			if err == nil {
				t.Errorf("parseDynamoFloat(%q) = %v, want error", tt.in, f)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseDynamoFloat(%q): %v", tt.in, err)
			continue
		}
		if got := formatDynamoFloat(f); got != tt.format {
			t.Errorf("formatDynamoFloat(parseDynamoFloat(%q)) = %q, want %q", tt.in, got, tt.format)
		}
	}
}

// TestDecodeNumbers: counters written by a Java Double path or normalised
// by DynamoDB decode to the same integers.
func TestDecodeNumbers(t *testing.T) {
	l, err := DecodeLease(withAttrs(map[string]types.AttributeValue{
		AttrLeaseCounter:                 n("1.0E7"),
		AttrOwnerSwitchesSinceCheckpoint: n("-0"),
		AttrCheckpointSubSequenceNumber:  n("3.0"),
		AttrThroughputKBps:               n("1.0E7"),
	}))
	if err != nil {
		t.Fatal(err)
	}
	if l.LeaseCounter != 10000000 || l.OwnerSwitchesSinceCheckpoint != 0 || l.Checkpoint.SubSequenceNumber != 3 {
		t.Errorf("decoded %+v", l)
	}
	enc := EncodeLease(l)
	for attr, want := range map[string]string{
		AttrLeaseCounter: "10000000", AttrOwnerSwitchesSinceCheckpoint: "0",
		AttrCheckpointSubSequenceNumber: "3", AttrThroughputKBps: "10000000",
	} {
		if got := enc[attr].(*types.AttributeValueMemberN).Value; got != want {
			t.Errorf("encoded %s = %q, want %q", attr, got, want)
		}
	}
}

func TestDecodeMalformed(t *testing.T) {
	tests := []struct {
		name     string
		item     map[string]types.AttributeValue
		attr     string
		reason   string // substring of Reason
		fullText string // exact Error() when set
	}{
		{"leaseCounter missing", withAttrs(nil, AttrLeaseCounter), AttrLeaseCounter, "missing",
			`lease "shardId-000000000001": leaseCounter missing`},
		{"ownerSwitches missing", withAttrs(nil, AttrOwnerSwitchesSinceCheckpoint), AttrOwnerSwitchesSinceCheckpoint, "missing", ""},
		{"checkpoint missing", withAttrs(nil, AttrCheckpoint), AttrCheckpoint, "missing", ""},
		{"checkpoint abc", withAttrs(map[string]types.AttributeValue{AttrCheckpoint: s("abc")}), AttrCheckpoint,
			"not a sequence number or sentinel", `lease "shardId-000000000001": checkpoint "abc" is not a sequence number or sentinel`},
		{"checkpoint empty", withAttrs(map[string]types.AttributeValue{AttrCheckpoint: s("")}), AttrCheckpoint, "not a sequence number", ""},
		{"checkpoint negative", withAttrs(map[string]types.AttributeValue{AttrCheckpoint: s("-1")}), AttrCheckpoint, "not a sequence number", ""},
		{"checkpoint as N", withAttrs(map[string]types.AttributeValue{AttrCheckpoint: n("5")}), AttrCheckpoint, "has type N, want S", ""},
		{"leaseCounter as S", withAttrs(map[string]types.AttributeValue{AttrLeaseCounter: s("5")}), AttrLeaseCounter,
			"has type S, want N", `lease "shardId-000000000001": leaseCounter has type S, want N`},
		{"leaseCounter fraction", withAttrs(map[string]types.AttributeValue{AttrLeaseCounter: n("1.5")}), AttrLeaseCounter, "not an integer", ""},
		{"leaseCounter overflow", withAttrs(map[string]types.AttributeValue{AttrLeaseCounter: n("1e30")}), AttrLeaseCounter, "out of int64 range", ""},
		{"sub as S", withAttrs(map[string]types.AttributeValue{AttrCheckpointSubSequenceNumber: s("0")}), AttrCheckpointSubSequenceNumber, "want N", ""},
		{"leaseKey empty", withAttrs(map[string]types.AttributeValue{AttrLeaseKey: s("")}), AttrLeaseKey, "is empty",
			"lease item: leaseKey is empty"},
		{"leaseKey missing", withAttrs(nil, AttrLeaseKey), AttrLeaseKey, "missing", "lease item: leaseKey missing"},
		{"leaseKey as N", withAttrs(map[string]types.AttributeValue{AttrLeaseKey: n("1")}), AttrLeaseKey, "has type N, want S", ""},
		{"leaseOwner as N", withAttrs(map[string]types.AttributeValue{AttrLeaseOwner: n("1")}), AttrLeaseOwner, "has type N, want S", ""},
		{"parentShardId as S", withAttrs(map[string]types.AttributeValue{AttrParentShardID: s("shardId-0")}), AttrParentShardID, "has type S, want SS", ""},
		{"parentShardId as L", withAttrs(map[string]types.AttributeValue{AttrParentShardID: &types.AttributeValueMemberL{}}), AttrParentShardID, "has type L, want SS", ""},
		{"childShardIds empty member", withAttrs(map[string]types.AttributeValue{AttrChildShardIDs: ss("shardId-2", "")}), AttrChildShardIDs, "empty shard id", ""},
		{"startingHashKey not decimal", withAttrs(map[string]types.AttributeValue{AttrStartingHashKey: s("0x10")}), AttrStartingHashKey, "not a decimal hash key", ""},
		{"startingHashKey as N", withAttrs(map[string]types.AttributeValue{AttrStartingHashKey: n("0")}), AttrStartingHashKey, "has type N, want S", ""},
		{"hash range reversed", withAttrs(map[string]types.AttributeValue{AttrStartingHashKey: s("10"), AttrEndingHashKey: s("9")}), AttrEndingHashKey, "not greater than startingHashKey", ""},
		{"hash range empty", withAttrs(map[string]types.AttributeValue{AttrStartingHashKey: s("10"), AttrEndingHashKey: s("010")}), AttrEndingHashKey, "not greater than", ""},
		{"throughput as S", withAttrs(map[string]types.AttributeValue{AttrThroughputKBps: s("1")}), AttrThroughputKBps, "has type S, want N", ""},
		{"throughput overflow", withAttrs(map[string]types.AttributeValue{AttrThroughputKBps: n("1e999")}), AttrThroughputKBps, "out of float64 range", ""},
		{"pendingCheckpoint invalid", withAttrs(map[string]types.AttributeValue{AttrPendingCheckpoint: s("xyz")}), AttrPendingCheckpoint, "not a sequence number", ""},
		{"pending sub as S", withAttrs(map[string]types.AttributeValue{AttrPendingCheckpoint: s("5"), AttrPendingCheckpointSubSequenceNumber: s("1")}), AttrPendingCheckpointSubSequenceNumber, "want N", ""},
		{"pendingCheckpointState as S", withAttrs(map[string]types.AttributeValue{AttrPendingCheckpointState: s("x")}), AttrPendingCheckpointState, "has type S, want B", ""},
		{"checkpointOwner as BOOL", withAttrs(map[string]types.AttributeValue{AttrCheckpointOwner: &types.AttributeValueMemberBOOL{}}), AttrCheckpointOwner, "has type BOOL, want S", ""},
		{"shardId as N", withAttrs(map[string]types.AttributeValue{AttrShardID: n("7")}), AttrShardID, "has type N, want S", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := DecodeLease(tt.item)
			var me *MalformedError
			if !errors.As(err, &me) {
				t.Fatalf("DecodeLease = %+v, %v; want *MalformedError", l, err)
			}
			if me.Attr != tt.attr || !strings.Contains(me.Reason, tt.reason) {
				t.Errorf("error %q: Attr %q Reason %q; want Attr %q, Reason containing %q", err, me.Attr, me.Reason, tt.attr, tt.reason)
			}
			if tt.fullText != "" && err.Error() != tt.fullText {
				t.Errorf("Error() = %q, want %q", err, tt.fullText)
			}
			if !reflect.DeepEqual(l, Lease{}) {
				t.Errorf("a failed decode returned a partial lease %+v", l)
			}
		})
	}
}

func TestDecodeNotLease(t *testing.T) {
	for _, et := range []types.AttributeValue{s("LEADER"), s(""), s("lease"), n("1")} {
		item := withAttrs(map[string]types.AttributeValue{AttrEntityType: et})
		if IsLeaseItem(item) {
			t.Errorf("entityType %s: IsLeaseItem true", showAV(et))
		}
		var nl *NotLeaseError
		if _, err := DecodeLease(item); !errors.As(err, &nl) {
			t.Errorf("entityType %s: DecodeLease error %v, want *NotLeaseError", showAV(et), err)
		}
	}
	for _, item := range []map[string]types.AttributeValue{
		baseItem(),
		withAttrs(map[string]types.AttributeValue{AttrEntityType: s(EntityTypeLease)}),
		withAttrs(map[string]types.AttributeValue{AttrEntityType: nil}),
	} {
		if !IsLeaseItem(item) {
			t.Errorf("IsLeaseItem false for %v", item)
		}
	}
	if ItemKey(map[string]types.AttributeValue{AttrLeaseKey: n("1")}) != "" || ItemKey(nil) != "" {
		t.Error("ItemKey of an item without an S leaseKey must be empty")
	}
}

// TestDecodeDefaults: optional attributes may be absent, and empty strings
// read as absent (KCL's isNullOrEmpty checks).
func TestDecodeDefaults(t *testing.T) {
	l, err := DecodeLease(withAttrs(map[string]types.AttributeValue{
		AttrLeaseOwner:        s(""),
		AttrCheckpointOwner:   s(""),
		AttrPendingCheckpoint: s(""),
		AttrStartingHashKey:   s(""),
		AttrParentShardID:     &types.AttributeValueMemberSS{},
	}, AttrCheckpointSubSequenceNumber))
	if err != nil {
		t.Fatal(err)
	}
	want := Lease{LeaseKey: "shardId-000000000001", LeaseCounter: 1542, Checkpoint: SequenceNumber{SequenceNumber: TRIM_HORIZON}}
	if !reflect.DeepEqual(l, want) {
		t.Errorf("got %+v\nwant %+v", l, want)
	}
}

// TestEncodeNeverEmpty: KCL's DynamoUtils never writes an empty S or SS;
// neither do we, whatever the Lease holds.
func TestEncodeNeverEmpty(t *testing.T) {
	l := Lease{
		LeaseKey:          "shardId-000000000001",
		Checkpoint:        SequenceNumber{SequenceNumber: LATEST},
		PendingCheckpoint: &SequenceNumber{SubSequenceNumber: 4}, // empty sequence: not written, like KCL
		ParentShardIDs:    []string{},
		ChildShardIDs:     []string{"", ""},
	}
	enc := EncodeLease(l)
	want := map[string]types.AttributeValue{
		AttrLeaseKey:                     s("shardId-000000000001"),
		AttrLeaseCounter:                 n("0"),
		AttrOwnerSwitchesSinceCheckpoint: n("0"),
		AttrCheckpoint:                   s(LATEST),
		AttrCheckpointSubSequenceNumber:  n("0"),
	}
	diffItems(t, want, enc)

	enc = EncodeLease(Lease{ParentShardIDs: []string{"a", "", "b"}})
	if got := enc[AttrParentShardID]; !avEqual(got, ss("a", "b")) {
		t.Errorf("parentShardId = %s, want the non-empty members", showAV(got))
	}
	for name, av := range enc {
		if v, ok := av.(*types.AttributeValueMemberS); ok && v.Value == "" {
			t.Errorf("zero Lease encodes %s as an empty S", name)
		}
	}
}

// TestEncodeAll covers every optional attribute, including the pending
// checkpoint family that no fixture carries.
func TestEncodeAll(t *testing.T) {
	l := Lease{
		LeaseKey: "shardId-000000000009", LeaseOwner: "w", LeaseCounter: 9, OwnerSwitchesSinceCheckpoint: 2,
		Checkpoint:             SequenceNumber{SequenceNumber: "123", SubSequenceNumber: 1},
		PendingCheckpoint:      &SequenceNumber{SequenceNumber: "456", SubSequenceNumber: 2},
		PendingCheckpointState: []byte{0, 1, 2},
		ParentShardIDs:         []string{"shardId-000000000001", "shardId-000000000002"},
		ChildShardIDs:          []string{"shardId-000000000010"},
		StartingHashKey:        "1", EndingHashKey: "2",
		ThroughputKBps:  ptr(0.5),
		CheckpointOwner: "old", EntityType: "LEASE",
		Extra: map[string]types.AttributeValue{"custom": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"x": n("1")}}},
	}
	want := map[string]types.AttributeValue{
		AttrLeaseKey: s("shardId-000000000009"), AttrLeaseOwner: s("w"), AttrLeaseCounter: n("9"),
		AttrOwnerSwitchesSinceCheckpoint: n("2"), AttrCheckpoint: s("123"), AttrCheckpointSubSequenceNumber: n("1"),
		AttrPendingCheckpoint: s("456"), AttrPendingCheckpointSubSequenceNumber: n("2"),
		AttrPendingCheckpointState: &types.AttributeValueMemberB{Value: []byte{0, 1, 2}},
		AttrParentShardID:          ss("shardId-000000000001", "shardId-000000000002"),
		AttrChildShardIDs:          ss("shardId-000000000010"),
		AttrStartingHashKey:        s("1"), AttrEndingHashKey: s("2"),
		AttrThroughputKBps:  n("0.5"),
		AttrCheckpointOwner: s("old"), AttrEntityType: s("LEASE"),
		"custom": l.Extra["custom"],
	}
	enc := EncodeLease(l)
	diffItems(t, want, enc)
	back, err := DecodeLease(enc)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, l) {
		t.Errorf("round trip\n got %+v\nwant %+v", back, l)
	}
	if err := l.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

// TestExtraPreserved: attributes a newer KCL (or an operator) added survive
// decode/encode, and so do the two known attributes KCL ignores.
func TestExtraPreserved(t *testing.T) {
	item := withAttrs(map[string]types.AttributeValue{
		"futureAttr": &types.AttributeValueMemberL{Value: []types.AttributeValue{n("1"), s("x")}},
		"emptyS":     s(""), // DynamoDB allows empty non-key strings; not ours to drop
		// toDynamoRecord quirk: the sub-sequence number written as N.
		AttrPendingCheckpointState: n("0"),
		// No pendingCheckpoint: KCL ignores this, we keep it.
		AttrPendingCheckpointSubSequenceNumber: n("7"),
	})
	l, err := DecodeLease(item)
	if err != nil {
		t.Fatal(err)
	}
	if l.PendingCheckpoint != nil || l.PendingCheckpointState != nil {
		t.Errorf("ignored attributes decoded into typed fields: %+v", l)
	}
	if len(l.Extra) != 4 {
		t.Errorf("Extra = %v, want the 4 unconsumed attributes", l.Extra)
	}
	diffItems(t, item, EncodeLease(l))

	// A typed value wins over an Extra entry of the same name.
	l.PendingCheckpoint = &SequenceNumber{SequenceNumber: "5", SubSequenceNumber: 1}
	l.PendingCheckpointState = []byte("s")
	enc := EncodeLease(l)
	if got := enc[AttrPendingCheckpointSubSequenceNumber]; !avEqual(got, n("1")) {
		t.Errorf("pendingCheckpointSubSequenceNumber = %s, want the typed value", showAV(got))
	}
	if _, ok := enc[AttrPendingCheckpointState].(*types.AttributeValueMemberB); !ok {
		t.Errorf("pendingCheckpointState = %s, want B", showAV(enc[AttrPendingCheckpointState]))
	}
}

// TestDecodeDoesNotAlias: the Lease must not share slices with the item, so
// editing one cannot corrupt the other.
func TestDecodeDoesNotAlias(t *testing.T) {
	parents := ss("shardId-000000000000")
	state := &types.AttributeValueMemberB{Value: []byte{1}}
	l, err := DecodeLease(withAttrs(map[string]types.AttributeValue{AttrParentShardID: parents, AttrPendingCheckpointState: state}))
	if err != nil {
		t.Fatal(err)
	}
	l.ParentShardIDs[0] = "changed"
	l.PendingCheckpointState[0] = 9
	if parents.(*types.AttributeValueMemberSS).Value[0] != "shardId-000000000000" || state.Value[0] != 1 {
		t.Error("decoded lease aliases the item's slices")
	}
}

func TestParseMultiStreamKey(t *testing.T) {
	tests := []struct {
		key           string
		stream, shard string
		ok            bool
	}{
		{"123456789012:orders:1700000000:shardId-000000000007", "123456789012:orders:1700000000", "shardId-000000000007", true},
		{"1:s:1:shardId-1", "1:s:1", "shardId-1", true},
		{"123:orders:1:shard:with:colons", "123:orders:1", "shard:with:colons", true}, // split(":", 4)
		{"123:my-stream.v2_x:1:shardId-1", "123:my-stream.v2_x:1", "shardId-1", true},
		{"shardId-000000000001", "", "", false},
		{"123:orders:1700000000", "", "", false}, // stream identifier alone
		{"123:orders:1:", "", "", false},
		{"123:orders:0:shardId-1", "", "", false},                    // epoch must be > 0
		{"123:orders:99999999999999999999:shardId-1", "", "", false}, // epoch not a long
		{"abc:orders:1:shardId-1", "", "", false},
		{"123::1:shardId-1", "", "", false},
		{":orders:1:shardId-1", "", "", false},
		{"123:or:ders:1:shardId-1", "", "", false},
		{"", "", "", false},
	}
	for _, tt := range tests {
		stream, shard, ok := ParseMultiStreamKey(tt.key)
		if stream != tt.stream || shard != tt.shard || ok != tt.ok {
			t.Errorf("ParseMultiStreamKey(%q) = %q, %q, %v; want %q, %q, %v", tt.key, stream, shard, ok, tt.stream, tt.shard, tt.ok)
		}
	}
}

func TestLeaseKeysHelpers(t *testing.T) {
	tests := []struct {
		name    string
		l       Lease
		shard   string
		parents []string
	}{
		{"single stream", Lease{LeaseKey: "shardId-2", ParentShardIDs: []string{"shardId-0", "shardId-1"}},
			"shardId-2", []string{"shardId-0", "shardId-1"}},
		{"multi stream", Lease{LeaseKey: "1:s:5:shardId-2", StreamName: "1:s:5", ShardID: "shardId-2", ParentShardIDs: []string{"shardId-0"}},
			"shardId-2", []string{"1:s:5:shardId-0"}},
		{"multi stream without streamName/shardId attributes", Lease{LeaseKey: "1:s:5:shardId-2", ParentShardIDs: []string{"shardId-0"}},
			"shardId-2", []string{"1:s:5:shardId-0"}},
		{"root", Lease{LeaseKey: "shardId-0"}, "shardId-0", nil},
	}
	for _, tt := range tests {
		if got := tt.l.ShardIDOrKey(); got != tt.shard {
			t.Errorf("%s: ShardIDOrKey = %q, want %q", tt.name, got, tt.shard)
		}
		if got := tt.l.ParentLeaseKeys(); !reflect.DeepEqual(got, tt.parents) {
			t.Errorf("%s: ParentLeaseKeys = %q, want %q", tt.name, got, tt.parents)
		}
	}
}

func TestValidate(t *testing.T) {
	ok := Lease{LeaseKey: "k", Checkpoint: SequenceNumber{SequenceNumber: "1"}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid lease: %v", err)
	}
	bad := []struct {
		attr string
		edit func(*Lease)
	}{
		{AttrLeaseKey, func(l *Lease) { l.LeaseKey = "" }},
		{AttrCheckpoint, func(l *Lease) { l.Checkpoint.SequenceNumber = "" }},
		{AttrPendingCheckpoint, func(l *Lease) { l.PendingCheckpoint = &SequenceNumber{SequenceNumber: "x"} }},
		{AttrParentShardID, func(l *Lease) { l.ParentShardIDs = []string{""} }},
		{AttrEndingHashKey, func(l *Lease) { l.EndingHashKey = "1e5" }},
		{AttrThroughputKBps, func(l *Lease) { nan := 0.0; nan /= nan; l.ThroughputKBps = &nan }},
		{AttrEntityType, func(l *Lease) { l.EntityType = "LEADER" }},
	}
	for _, b := range bad {
		l := ok
		b.edit(&l)
		var me *MalformedError
		if err := l.Validate(); !errors.As(err, &me) || me.Attr != b.attr {
			t.Errorf("%s: Validate = %v, want a MalformedError on %s", b.attr, err, b.attr)
		}
	}
	// Non-finite throughput is never written.
	inf := 1.0
	inf /= 0
	if _, ok := EncodeLease(Lease{ThroughputKBps: &inf})[AttrThroughputKBps]; ok {
		t.Error("EncodeLease wrote an infinite throughputKBps")
	}
}
