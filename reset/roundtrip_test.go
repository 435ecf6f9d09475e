package reset

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/testenv/testfixtures"
	"github.com/kcltool/kcltool/leasecore"
)

// fixtures reads the repository's KCL fixtures (testdata/kcl): items
// exactly as the Java KCL writes them.
func fixtures(t *testing.T, names ...string) []map[string]ddbtypes.AttributeValue {
	t.Helper()
	var out []map[string]ddbtypes.AttributeValue
	for _, n := range names {
		data := testfixtures.Read(t, n)
		chunks := [][]byte{data}
		if strings.HasSuffix(n, ".jsonl") {
			chunks = bytes.Split(bytes.TrimSpace(data), []byte("\n"))
		}
		for _, c := range chunks {
			item, err := leasecore.UnmarshalItemJSON(c)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, item)
		}
	}
	return out
}

// fixtureTables groups the fixtures that can share a table (one leaseKey
// each).
var fixtureTables = map[string][]string{
	"kcl2":    {"f1-kcl2-active.json", "f3-shard-end-parent.json", "f4-child-waiting.json", "f6-kcl35-non-lease.jsonl"},
	"kcl35":   {"f2-kcl35-active.json"},
	"handoff": {"f2b-kcl3-handoff.json"},
	"multi":   {"f5-multistream.json"},
}

// Every shared fixture survives export → reset → import attribute for
// attribute, except leaseCounter, which only grows. Both export forms.
func TestExportResetImportRestoresEveryFixture(t *testing.T) {
	for name, files := range fixtureTables {
		for _, form := range []string{"json", "csv"} {
			t.Run(name+"/"+form, func(t *testing.T) {
				w := newTable(t)
				original := fixtures(t, files...)
				w.seed(original...)
				e, err := ExportTable(w.ctx, w.ddb, w.table, nil)
				if err != nil {
					t.Fatal(err)
				}
				var buf bytes.Buffer
				if form == "json" {
					err = e.WriteJSON(&buf)
				} else {
					err = e.WriteCSV(&buf)
				}
				if err != nil {
					t.Fatal(err)
				}
				back, err := ReadExport(buf.Bytes())
				if err != nil {
					t.Fatal(err)
				}
				if len(back.Items) != len(original) {
					t.Fatalf("export holds %d items, the table %d", len(back.Items), len(original))
				}
				byKey := itemsByKey(original)
				for _, it := range back.Items {
					// Byte for byte, in DynamoDB JSON, against the fixture.
					got, err1 := leasecore.MarshalItemJSON(it.Item)
					want, err2 := leasecore.MarshalItemJSON(byKey[it.LeaseKey])
					if err1 != nil || err2 != nil || !bytes.Equal(got, want) {
						t.Errorf("%s changed in the %s export:\n got %s\nwant %s", it.LeaseKey, form, got, want)
					}
				}

				// Reset every lease, forcing through the handoff.
				cps := map[string]string{}
				for _, it := range back.Items {
					if it.Kind == KindLease {
						cps[it.LeaseKey] = leasecore.TRIM_HORIZON
						if it.Checkpoint.SequenceNumber == leasecore.TRIM_HORIZON {
							cps[it.LeaseKey] = "42"
						}
					}
				}
				w.execute(w.positionsPlan(cps), ExecOptions{Force: true})

				p, err := PlanImport(w.ctx, w.ddb, ImportOptions{Table: w.table, Export: back, File: "export." + form})
				if err != nil {
					t.Fatal(err)
				}
				x := w.execute(p, ExecOptions{})
				if n := x.Count(OutcomeApplied); n != len(cps) {
					t.Fatalf("import applied %d of %d: %+v", n, len(cps), x.Results)
				}
				now := w.items()
				for _, orig := range original {
					key := leasecore.ItemKey(orig)
					restored := now[key]
					if leasecore.IsLeaseItem(orig) {
						restored = withCounter(restored, counterOf(orig))
					}
					got, _ := leasecore.MarshalItemJSON(restored)
					want, _ := leasecore.MarshalItemJSON(orig)
					if !bytes.Equal(got, want) {
						t.Errorf("%s differs after export → reset → import (%v):\n got %s\nwant %s", key, diffAttributes(orig, now[key], leasecore.AttrLeaseCounter), got, want)
					}
					if leasecore.IsLeaseItem(orig) && counterOf(now[key]) <= counterOf(orig) {
						t.Errorf("%s leaseCounter %d, want more than %d", key, counterOf(now[key]), counterOf(orig))
					}
				}
			})
		}
	}
}

func TestExecuteRefusesAHandoffUnlessForced(t *testing.T) {
	w := newTable(t)
	w.seed(fixtures(t, "f2b-kcl3-handoff.json", "f6-kcl35-non-lease.jsonl")...)
	key := "shardId-000000000001"
	p := w.positionsPlan(map[string]string{key: leasecore.TRIM_HORIZON})
	if c := changeOf(t, p, key); !strings.Contains(c.Reason, "handoff (worker-b → worker-c): applying needs --force") {
		t.Errorf("reason %q does not mention the handoff", c.Reason)
	}
	_, err := Execute(w.ctx, w.ddb, p, ExecOptions{Sample: time.Millisecond})
	var refused *RefusedError
	if !errors.As(err, &refused) || len(refused.Handoff) != 1 || refused.Handoff[0] != key {
		t.Fatalf("err %v, want a refusal naming the handoff", err)
	}
	if l := w.leases()[key]; l.CheckpointOwner != "worker-b" || l.LeaseCounter != 877 {
		t.Fatalf("the refused reset wrote: %+v", l)
	}
	x := w.execute(p, ExecOptions{Force: true})
	if x.Count(OutcomeApplied) != 1 {
		t.Fatalf("%+v", x.Results)
	}
	l := w.leases()[key]
	if l.CheckpointOwner != "" || l.LeaseOwner != "" || l.LeaseCounter != 878 || l.Checkpoint.SequenceNumber != leasecore.TRIM_HORIZON ||
		l.Checkpoint.SubSequenceNumber != 0 || l.EntityType != "LEASE" || l.ThroughputKBps == nil {
		t.Errorf("after the forced reset: %+v", l)
	}
	// The non-lease items are untouched.
	if n := len(w.scan().NonLeases); n != 3 {
		t.Errorf("%d non-lease items left, want 3", n)
	}
}

// export → reset --at (which recreates cleaned-up parents) → import
// --prune puts the table back as it was.
func TestImportPruneUndoesAResetThatRecreatedParents(t *testing.T) {
	w := newLineageWorld(t)
	before := w.items()
	e, err := ExportTable(w.ctx, w.ddb, w.table, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := w.plan(ResetOptions{Target: Target{At: w.t1}})
	if p.Counts()[ActionCreate] == 0 {
		t.Fatal("the reset recreates no parent")
	}
	w.execute(p, ExecOptions{})
	if n := len(w.items()); n != 5 {
		t.Fatalf("%d leases after the reset, want 5", n)
	}
	ip, err := PlanImport(w.ctx, w.ddb, ImportOptions{Table: w.table, Export: e, File: "backup.json", Prune: true})
	if err != nil {
		t.Fatal(err)
	}
	if c := ip.Counts(); c[ActionDelete] != 3 || c[ActionRestore] != 2 {
		t.Fatalf("import plan %v", c)
	}
	w.execute(ip, ExecOptions{})
	after := w.items()
	if len(after) != len(before) {
		t.Fatalf("%d items after the import, want %d", len(after), len(before))
	}
	for k, it := range before {
		if diff := diffAttributes(it, after[k], leasecore.AttrLeaseCounter); len(diff) > 0 {
			t.Errorf("%s differs in %v", k, diff)
		}
	}
}

// --to-app copies positions into another application's table: missing
// leases created unowned with the lineage, existing ones set.
func TestImportToAnotherApplication(t *testing.T) {
	src := newTable(t)
	src.seed(fixtures(t, "f1-kcl2-active.json", "f3-shard-end-parent.json", "f4-child-waiting.json", "f6-kcl35-non-lease.jsonl")...)
	e, err := ExportTable(src.ctx, src.ddb, src.table, nil)
	if err != nil {
		t.Fatal(err)
	}
	dst := newTable(t)
	dst.lease("shardId-000000000001", "other-worker", leasecore.LATEST)
	p, err := PlanImport(dst.ctx, dst.ddb, ImportOptions{Table: dst.table, Export: e, File: "src.json", PositionsOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Counts(); c[ActionCreate] != 2 || c[ActionUpdate] != 1 || len(p.Warnings) != 1 {
		t.Fatalf("plan %v, warnings %q", c, p.Warnings)
	}
	dst.execute(p, ExecOptions{})
	ls := dst.leases()
	if l := ls["shardId-000000000001"]; l.Checkpoint.SequenceNumber != "49590338271490256608559692538361571095921575989136588898" || l.LeaseOwner != "" || l.LeaseCounter != 8 {
		t.Errorf("existing lease: %+v", l)
	}
	if l := ls["shardId-000000000000"]; l.Checkpoint.SequenceNumber != leasecore.SHARD_END || l.LeaseOwner != "" || l.LeaseCounter != 0 ||
		len(l.ChildShardIDs) != 2 || l.StartingHashKey != "0" {
		t.Errorf("created parent: %+v", l)
	}
	if l := ls["shardId-000000000002"]; l.Checkpoint.SequenceNumber != leasecore.TRIM_HORIZON || len(l.ParentShardIDs) != 1 || l.EntityType != "LEASE" {
		t.Errorf("created child: %+v", l)
	}
	if n := len(dst.scan().NonLeases); n != 0 {
		t.Errorf("%d non-lease items copied into another application's table", n)
	}
}
