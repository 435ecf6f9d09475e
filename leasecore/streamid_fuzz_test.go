package leasecore

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The KCL's pattern for a serialized StreamIdentifier, as a second,
// independent statement of the rule ParseStreamIdentifier implements.
var kclStreamIdentifierRE = regexp.MustCompile(`^([0-9]+):([^:]+):([0-9]+)$`)

func kclAccepts(s string) bool {
	m := kclStreamIdentifierRE.FindStringSubmatch(s)
	if m == nil {
		return false
	}
	epoch, err := strconv.ParseInt(m[3], 10, 64)
	return err == nil && epoch > 0
}

// FuzzMultiStreamFields builds lease items from a leaseKey, a streamName
// and a shardId (each with or without colons, empty or not) and checks:
//   - ParseStreamIdentifier accepts exactly what the KCL's pattern does;
//   - DecodeLease never panics; an item it refuses gives a *MalformedError
//     naming the item's lease key, on streamName when that is what is wrong;
//   - a lease it accepts names its stream in a shape the checked parser
//     reads (MultiStream gives no error), and the helpers that split keys
//     (ShardIDOrKey, ParentLeaseKeys, StreamID) do not panic.
func FuzzMultiStreamFields(f *testing.F) {
	for _, seed := range [][3]string{
		{"123456789012:orders:1700000000:shardId-000000000007", "123456789012:orders:1700000000", "shardId-000000000007"},
		{"123456789012:orders:1700000000:shardId-000000000007", "", ""},
		{"orders:shardId-000000000001", "orders", "shardId-000000000001"},
		{"shardId-000000000001", "orders", ""},
		{"shardId-000000000001", "", ""},
		{"a:b", "", ""},
		{"1:2:3:4:5", "1:2:3:4", "4:5"},
		{"123:orders:0:shardId-0", "123:orders:0", "shardId-0"},
		{"123:orders:-1:s", "123:orders:-1", "s"},
		{"x", "123::1", ""},
		{"x", "abc:orders:1", ""},
		{"x", ":::", ""},
		{"x", "1:o:99999999999999999999", ""},
		{"x", "1:o:0017", ""},
		{"x", "1:o\n:1", ""},
		{"", "1:o:1", "s"},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, key, streamName, shardID string) {
		_, perr := ParseStreamIdentifier(streamName)
		if (perr == nil) != kclAccepts(streamName) {
			t.Fatalf("ParseStreamIdentifier(%q) = %v, but the KCL's pattern accepts it: %v", streamName, perr, kclAccepts(streamName))
		}

		item := map[string]types.AttributeValue{
			AttrLeaseKey:                     &types.AttributeValueMemberS{Value: key},
			AttrLeaseCounter:                 &types.AttributeValueMemberN{Value: "1"},
			AttrOwnerSwitchesSinceCheckpoint: &types.AttributeValueMemberN{Value: "0"},
			AttrCheckpoint:                   &types.AttributeValueMemberS{Value: TRIM_HORIZON},
			AttrStreamName:                   &types.AttributeValueMemberS{Value: streamName},
			AttrShardID:                      &types.AttributeValueMemberS{Value: shardID},
			AttrParentShardID:                &types.AttributeValueMemberSS{Value: []string{"shardId-000000000000"}},
		}
		l, err := DecodeLease(item)
		if err != nil {
			var me *MalformedError
			if !errors.As(err, &me) {
				t.Fatalf("DecodeLease: untyped error %v", err)
			}
			if key != "" && me.LeaseKey != key {
				t.Fatalf("the error names lease %q, want %q: %v", me.LeaseKey, key, err)
			}
			if key != "" && streamName != "" && perr != nil && me.Attr != AttrStreamName {
				t.Fatalf("streamName %q is wrong, but the error is about %s: %v", streamName, me.Attr, err)
			}
			if !strings.Contains(err.Error(), me.Attr) {
				t.Fatalf("the error does not say which attribute: %v", err)
			}
			return
		}
		if streamName != "" && perr != nil {
			t.Fatalf("DecodeLease accepted streamName %q: %v", streamName, perr)
		}
		id, multi, err := l.MultiStream()
		if err != nil {
			t.Fatalf("a decoded lease's stream does not parse: %v", err)
		}
		if multi != l.IsMultiStream() {
			t.Fatalf("MultiStream says %v, IsMultiStream %v", multi, l.IsMultiStream())
		}
		if multi && (id.Name == "" || strings.Contains(id.Name, ":") || id.CreationEpoch <= 0) {
			t.Fatalf("stream %+v of %q", id, l.StreamID())
		}
		_ = l.ShardIDOrKey()
		for _, p := range l.ParentLeaseKeys() {
			if multi && !strings.HasPrefix(p, l.StreamID()+":") {
				t.Fatalf("parent key %q outside stream %q", p, l.StreamID())
			}
		}
	})
}

func TestParseStreamIdentifierSaysWhatIsWrong(t *testing.T) {
	for in, want := range map[string]string{
		"":                  "is empty",
		"orders":            `"orders" has 1 colon-separated parts, want 3`,
		"123:orders":        "has 2 colon-separated parts",
		"1:2:3:4":           "has 4 colon-separated parts",
		"abc:orders:1":      `the account "abc" is not digits`,
		"123::1":            "the stream name is empty",
		"123:orders:0":      `the creation epoch "0" is not a number of seconds above 0`,
		"123:orders:+5":     `the creation epoch "+5"`,
		"123:orders:9e9":    `the creation epoch "9e9"`,
		"1:o:9999999999999": "",
	} {
		_, err := ParseStreamIdentifier(in)
		switch {
		case want == "" && err != nil:
			t.Errorf("%q: %v", in, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
	id, err := ParseStreamIdentifier("123456789012:orders:1700000000")
	if err != nil || id != (StreamIdentifier{Account: "123456789012", Name: "orders", CreationEpoch: 1700000000}) || id.String() != "123456789012:orders:1700000000" {
		t.Errorf("%+v %v", id, err)
	}
}

// A lease item whose streamName is not account:stream:creationEpoch is a
// malformed item naming the lease and the attribute; before, it decoded,
// and the operator commands that split the name at ":" crashed on it.
func TestDecodeLeaseRefusesMalformedStreamName(t *testing.T) {
	item := EncodeLease(Lease{LeaseKey: "orders:shardId-000000000001", ShardID: "shardId-000000000001",
		Checkpoint: SequenceNumber{SequenceNumber: TRIM_HORIZON}})
	item[AttrStreamName] = &types.AttributeValueMemberS{Value: "orders"}
	_, err := DecodeLease(item)
	var me *MalformedError
	if !errors.As(err, &me) || me.LeaseKey != "orders:shardId-000000000001" || me.Attr != AttrStreamName {
		t.Fatalf("DecodeLease: %v, want a MalformedError on streamName of the lease", err)
	}
	if want := `lease "orders:shardId-000000000001": streamName "orders" has 1 colon-separated parts, want 3 (account:stream:creationEpoch)`; err.Error() != want {
		t.Errorf("error %q\nwant  %q", err, want)
	}
}
