package coordination

import (
	"context"
	"testing"

	"github.com/kcltool/kcltool/internal/testenv/clocktest"
)

// Remove deletes the item from the table written last, per layout: the
// side table (DEPLOYED) and the lease table (a new application's).
func TestReporterRemove(t *testing.T) {
	ctx := context.Background()
	t.Run("side table", func(t *testing.T) {
		r := newRig(t, true, true)
		r.migration(r.tb.CoordinatorState, ClientVersion3X)
		r.tableMigration(r.tb.CoordinatorState, TableMigrationDeployed)
		r.metrics(r.tb.WorkerMetrics, "w2", t0.Unix(), 5)
		rep := NewReporter(r.c, r.tb, "w1", clocktest.New(t0), ReporterOptions{})
		rep.SetState(r.detect())
		if err := rep.Report(ctx); err != nil || rep.Table() != r.tb.WorkerMetrics {
			t.Fatalf("Report: %v, table %q", err, rep.Table())
		}
		if err := rep.Remove(ctx); err != nil {
			t.Fatal(err)
		}
		if it := r.get(r.tb.WorkerMetrics, "wid", "w1"); it != nil {
			t.Fatalf("item left: %v", it)
		}
		if r.get(r.tb.WorkerMetrics, "wid", "w2") == nil {
			t.Fatal("another worker's item deleted")
		}
		// Removed for good: a later report writes nothing.
		if err := rep.Report(ctx); err != nil || r.get(r.tb.WorkerMetrics, "wid", "w1") != nil {
			t.Fatalf("report after Remove: %v, item %v", err, r.get(r.tb.WorkerMetrics, "wid", "w1"))
		}
		// Missing item: nothing to delete, no error.
		if err := rep.Remove(ctx); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("lease table", func(t *testing.T) {
		r := newRig(t, true, false)
		r.migration(r.tb.Lease, ClientVersion3X)
		rep := NewReporter(r.c, r.tb, "w1", clocktest.New(t0), ReporterOptions{})
		rep.SetState(r.detect())
		if err := rep.Report(ctx); err != nil || rep.Table() != r.tb.Lease {
			t.Fatalf("Report: %v, table %q", err, rep.Table())
		}
		if err := rep.Remove(ctx); err != nil {
			t.Fatal(err)
		}
		if it := r.get(r.tb.Lease, "leaseKey", "w1"); it != nil {
			t.Fatalf("item left: %v", it)
		}
	})
	t.Run("never a lease", func(t *testing.T) {
		// The item was written, then a lease took its key (as if written
		// over by another tool): the condition keeps the lease.
		r := newRig(t, true, false)
		r.migration(r.tb.Lease, ClientVersion3X)
		rep := NewReporter(r.c, r.tb, "shardId-000000000000", clocktest.New(t0), ReporterOptions{})
		rep.SetState(r.detect())
		if err := rep.Report(ctx); err != nil {
			t.Fatal(err)
		}
		r.lease("shardId-000000000000", "someone")
		if err := rep.Remove(ctx); err != nil {
			t.Fatalf("condition failure is no error: %v", err)
		}
		if l := r.get(r.tb.Lease, "leaseKey", "shardId-000000000000"); strAttr(l, "leaseOwner") != "someone" {
			t.Fatalf("lease deleted: %v", l)
		}
	})
}
