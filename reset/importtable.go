package reset

import (
	"context"
	"errors"

	"github.com/kcltool/kcltool/leasecore"
)

// ImportTable is what PrepareImportTable found or did with an import's
// destination table.
type ImportTable int

const (
	// ImportTableExists: the table is there; nothing was done.
	ImportTableExists ImportTable = iota
	// ImportTableMissing: the table does not exist and, in a dry run,
	// was not created: plan against an empty table (ImportOptions.NoTable).
	ImportTableMissing
	// ImportTableCreated: the table did not exist and was created.
	ImportTableCreated
)

// PrepareImportTable readies the destination of an import allowed to
// create it. A missing table is created only when execute is set, so that
// a dry run writes nothing, by create: the caller's creation of a
// consumer's table (the KCL version's table and items, which this package
// does not know), or with create nil KCL 2.x's (leasecore.EnsureTable: on
// demand, hash key leaseKey). Errors are the table's, unwrapped, for the
// caller to explain.
func PrepareImportTable(ctx context.Context, api leasecore.TableAPI, table string, execute bool, create func(context.Context) error) (ImportTable, error) {
	err := leasecore.EnsureTable(ctx, api, table, false)
	var nf *leasecore.TableNotFoundError
	if !errors.As(err, &nf) {
		return ImportTableExists, err
	}
	if !execute {
		return ImportTableMissing, nil
	}
	if create == nil {
		create = func(ctx context.Context) error { return leasecore.EnsureTable(ctx, api, table, true) }
	}
	if err := create(ctx); err != nil {
		return ImportTableMissing, err
	}
	return ImportTableCreated, nil
}
