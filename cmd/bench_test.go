package cmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// TestBenchLeasesLs is `make bench`'s lease-listing figure: `leases ls -o
// json` on a 10,000-lease table against a bare paginated SDK Scan of the same
// table, measured alternately in the same run. It only runs with
// KCLTOOL_BENCH=1; timing belongs in benchmarks, never in unit tests.
func TestBenchLeasesLs(t *testing.T) {
	if os.Getenv("KCLTOOL_BENCH") == "" {
		t.Skip("benchmark: run with KCLTOOL_BENCH=1 (make bench)")
	}
	const leases, rounds = 10000, 7
	c := emulator.DynamoDB(t)
	table := emulator.Name(t, "bench")
	emulator.CreateLeaseTable(t, c, table)
	start := time.Now()
	fillLeases(t, c, table, leases)
	t.Logf("filled %d leases in %s", leases, time.Since(start).Round(time.Millisecond))

	base, _, _ := testFactory(t, false, nil)
	ls := func() {
		// A fresh factory per run, as each CLI invocation loads its config.
		f := cmdutil.NewFactory(&cmdutil.IOStreams{Out: io.Discard, ErrOut: io.Discard}, base.Getenv)
		if code := Run(context.Background(), f, []string{"leases", "ls", "--app", table, "-o", "json"}); code != 0 {
			t.Fatalf("ls exit %d", code)
		}
	}
	scan := func() {
		p := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String(table)})
		n := 0
		for p.HasMorePages() {
			out, err := p.NextPage(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			n += len(out.Items)
		}
		if n != leases {
			t.Fatalf("scan saw %d items", n)
		}
	}
	ls() // warm both paths once
	scan()
	var lsT, scanT []time.Duration
	for range rounds {
		lsT = append(lsT, timed(ls))
		scanT = append(scanT, timed(scan))
	}
	lsM, scanM := median(lsT), median(scanT)
	fmt.Printf("bench leases-ls: %d leases, %d rounds: kcltool leases ls -o json median %s; bare SDK Scan median %s; ratio %.2fx (goal <= 1.20x)\n",
		leases, rounds, lsM.Round(time.Millisecond), scanM.Round(time.Millisecond), float64(lsM)/float64(scanM))
}

func timed(fn func()) time.Duration {
	s := time.Now()
	fn()
	return time.Since(s)
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// fillLeases writes n KCL-shaped leases with BatchWriteItem.
func fillLeases(t *testing.T, c *dynamodb.Client, table string, n int) {
	t.Helper()
	fillLeaseRange(t, c, table, 0, n)
	if t.Failed() {
		t.FailNow()
	}
}
