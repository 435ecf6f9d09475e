package inspect

import (
	"fmt"
	"testing"

	"github.com/kcltool/kcltool/leasecore"
)

// BenchmarkLeaseRows builds the rows of a 100,000-lease listing, as
// `leases ls` does after its scan (docs/benchmarks.md, leases ls at scale):
// `go test -run X -bench LeaseRows -benchmem ./inspect`.
func BenchmarkLeaseRows(b *testing.B) {
	leases := make([]leasecore.Lease, 100000)
	for i := range leases {
		leases[i] = leasecore.Lease{
			LeaseKey: fmt.Sprintf("shardId-%012d", i), LeaseOwner: fmt.Sprintf("worker-%d", i%7), LeaseCounter: int64(1000 + i),
			Checkpoint:      leasecore.SequenceNumber{SequenceNumber: "49590338271490256608559692538361571095921575989136777777"},
			StartingHashKey: "0", EndingHashKey: "340282366920938463463374607431768211455",
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		LeaseRows(leases, nil)
	}
}
