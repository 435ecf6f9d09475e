package leases

import (
	"fmt"
	"io"
	"testing"

	"github.com/kcltool/kcltool/inspect"
	"github.com/kcltool/kcltool/leasecore"
)

// benchLeaseRows are n leases shaped as make bench's table holds them
// (fillLeaseRange), as rows of a listing.
func benchLeaseRows(n int) []inspect.LeaseRow {
	leases := make([]leasecore.Lease, n)
	for i := range leases {
		leases[i] = leasecore.Lease{
			LeaseKey: fmt.Sprintf("shardId-%012d", i), LeaseOwner: fmt.Sprintf("worker-%d", i%7), LeaseCounter: int64(1000 + i),
			Checkpoint:      leasecore.SequenceNumber{SequenceNumber: "49590338271490256608559692538361571095921575989136777777"},
			StartingHashKey: "0", EndingHashKey: "340282366920938463463374607431768211455",
		}
	}
	return inspect.LeaseRows(leases, nil)
}

// BenchmarkLeasesJSON writes `leases ls -o json` for 10,000 leases, the
// output half of TestBenchLeasesLs (docs/benchmarks.md):
// `go test -run X -bench 'LeasesJSON|LeasesCSV' -benchmem ./cmd`.
func BenchmarkLeasesJSON(b *testing.B) {
	rows := benchLeaseRows(10000)
	b.ReportAllocs()
	for b.Loop() {
		if err := writeLeasesJSON(io.Discard, rows); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLeasesCSV writes `leases ls -o csv` for the same 10,000 leases.
func BenchmarkLeasesCSV(b *testing.B) {
	rows := benchLeaseRows(10000)
	b.ReportAllocs()
	for b.Loop() {
		if err := writeLeasesCSV(io.Discard, rows); err != nil {
			b.Fatal(err)
		}
	}
}
