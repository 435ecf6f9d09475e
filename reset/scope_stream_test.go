package reset

import (
	"errors"
	"testing"

	"github.com/kcltool/kcltool/leasecore"
)

// pickStream shares StreamsOf's checked parser: a lease whose streamName is
// not account:stream:creationEpoch is an input error naming the lease;
// before, --stream equal to such a name panicked (the name split at ":"
// has no second part).
func TestPickStreamMalformedStreamNameIsAnError(t *testing.T) {
	good := leasecore.Lease{LeaseKey: "123456789012:orders:1700000000:shardId-0", StreamName: "123456789012:orders:1700000000", ShardID: "shardId-0"}
	for _, name := range []string{"orders", "123:orders", "abc:orders:1", "1:2:3:4"} {
		bad := leasecore.Lease{LeaseKey: name + ":shardId-1", StreamName: name, ShardID: "shardId-1"}
		for _, stream := range []string{"orders", name} {
			_, _, err := pickStream([]leasecore.Lease{good, bad}, stream)
			var me *leasecore.MalformedError
			if !errors.As(err, &me) || me.LeaseKey != bad.LeaseKey || me.Attr != leasecore.AttrStreamName || !IsInputError(err) {
				t.Errorf("streamName %q, --stream %q: %v, want an input error naming lease %q and its streamName", name, stream, err, bad.LeaseKey)
			}
		}
	}
	s, leases, err := pickStream([]leasecore.Lease{good}, "orders")
	if err != nil || s.ID != good.StreamName || s.Name != "orders" || len(leases) != 1 {
		t.Errorf("pickStream(good) = %+v %d, %v", s, len(leases), err)
	}
}
