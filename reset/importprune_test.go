package reset

import (
	"strings"
	"testing"
)

// The undo of a reset names the leases it recreated, with --prune; one that
// a worker has finished and deleted since is nothing to undo, so with
// --prune a --shard that neither the export nor the table has is a
// warning, and the rest is imported. Without --prune it stays an error (a
// mistyped shard).
func TestImportPruneWarnsOfAShardThatIsGone(t *testing.T) {
	w := newTable(t)
	w.lease(shardID(0), "", "100")
	w.lease(shardID(1), "", "100")
	e, err := ExportTable(w.ctx, w.ddb, w.table, nil)
	if err != nil {
		t.Fatal(err)
	}
	gone := shardID(9)
	opt := ImportOptions{Table: w.table, Export: e, File: "backup.json", Shards: []string{shardID(0), gone}}
	if _, err := PlanImport(w.ctx, w.ddb, opt); !IsInputError(err) || !strings.Contains(err.Error(), gone) {
		t.Fatalf("without --prune: %v, want an input error naming %s", err, gone)
	}
	opt.Prune = true
	p, err := PlanImport(w.ctx, w.ddb, opt)
	if err != nil {
		t.Fatalf("with --prune: %v", err)
	}
	if len(p.Changes) != 1 || p.Changes[0].LeaseKey != shardID(0) {
		t.Errorf("changes %+v, want the row of %s alone", p.Changes, shardID(0))
	}
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], gone) {
		t.Errorf("warnings %q, want one naming %s", p.Warnings, gone)
	}
}
