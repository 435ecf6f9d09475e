package reset

import (
	"context"
	"errors"
	"testing"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// TestPrepareImportTable on the local server: a dry run reports a missing
// table and creates nothing; with execute the table is created as a
// consumer's (a lease table leasecore accepts); an existing table is left
// alone.
func TestPrepareImportTable(t *testing.T) {
	ctx := context.Background()
	ddb := emulator.DynamoDB(t)
	table := emulator.Name(t, "imptable")

	got, err := PrepareImportTable(ctx, ddb, table, false, nil)
	if err != nil || got != ImportTableMissing {
		t.Fatalf("dry run on a missing table: %v, %v; want ImportTableMissing", got, err)
	}
	var nf *leasecore.TableNotFoundError
	if err := leasecore.EnsureTable(ctx, ddb, table, false); !errors.As(err, &nf) {
		t.Fatalf("the dry run created the table (or failed to look): %v", err)
	}

	got, err = PrepareImportTable(ctx, ddb, table, true, nil)
	if err != nil || got != ImportTableCreated {
		t.Fatalf("execute on a missing table: %v, %v; want ImportTableCreated", got, err)
	}
	if err := leasecore.EnsureTable(ctx, ddb, table, false); err != nil {
		t.Fatalf("the created table is not a lease table: %v", err)
	}

	for _, execute := range []bool{false, true} {
		got, err = PrepareImportTable(ctx, ddb, table, execute, nil)
		if err != nil || got != ImportTableExists {
			t.Errorf("existing table, execute=%v: %v, %v; want ImportTableExists", execute, got, err)
		}
	}
}
