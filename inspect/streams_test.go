package inspect

import (
	"errors"
	"strings"
	"testing"

	"github.com/kcltool/kcltool/leasecore"
)

// A lease whose streamName is not account:stream:creationEpoch (built by
// hand, not decoded: DecodeLease refuses it) gives an error naming the
// lease and what is wrong; before, StreamsOf indexed the second part of
// the split name and panicked.
func TestStreamsOfMalformedStreamNameIsAnError(t *testing.T) {
	good := leasecore.Lease{LeaseKey: "123456789012:orders:1700000000:shardId-0", StreamName: "123456789012:orders:1700000000", ShardID: "shardId-0"}
	for _, name := range []string{"orders", "123:orders", "abc:orders:1", "123:orders:0", "1:2:3:4"} {
		bad := leasecore.Lease{LeaseKey: name + ":shardId-1", StreamName: name, ShardID: "shardId-1"}
		for _, filter := range []string{"", "orders", name} {
			_, err := StreamsOf([]leasecore.Lease{good, bad}, filter)
			var me *leasecore.MalformedError
			if !errors.As(err, &me) || me.LeaseKey != bad.LeaseKey || me.Attr != leasecore.AttrStreamName ||
				!strings.Contains(err.Error(), "account:stream:creationEpoch") {
				t.Errorf("streamName %q, --stream %q: %v, want an error naming lease %q and its streamName", name, filter, err, bad.LeaseKey)
			}
		}
	}
	ss, err := StreamsOf([]leasecore.Lease{good}, "orders")
	if err != nil || len(ss) != 1 || ss[0].Name != "orders" || ss[0].ID != good.StreamName {
		t.Errorf("StreamsOf(good) = %+v, %v", ss, err)
	}
}

// A single-stream table and no stream given is ErrStreamRequired, which
// callers tell by errors.Is (doctor skips, cmd asks for its flag), not by
// the text.
func TestStreamsOfSingleStreamNeedsAStream(t *testing.T) {
	single := leasecore.Lease{LeaseKey: "shardId-000000000000"}
	if _, err := StreamsOf([]leasecore.Lease{single}, ""); !errors.Is(err, ErrStreamRequired) {
		t.Errorf("no stream given: %v, want ErrStreamRequired", err)
	}
	if ss, err := StreamsOf([]leasecore.Lease{single}, "orders"); err != nil || len(ss) != 1 || ss[0].Name != "orders" {
		t.Errorf("stream given: %+v, %v", ss, err)
	}
}
