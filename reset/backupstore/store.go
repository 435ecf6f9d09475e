// Package backupstore keeps the backups and plans that checkpoint reset and
// import save before their first write: in a local folder, or under a
// prefix of an S3 bucket that a whole team can read (--backup-dir
// s3://bucket/prefix). The commands see one interface, so a backup is saved,
// listed and read back the same way wherever it lives.
package backupstore

import (
	"context"
	"io"
)

// Store is where backups are kept. Names are file names
// (kcltool-reset-orders-20261101T100000.000Z.backup.json): the same in a
// folder and, after the prefix, in a bucket.
type Store interface {
	// Put saves data under name, whole or not at all: a reader never sees
	// part of it (a file renamed into place; an S3 object, which appears
	// only once its upload completed).
	Put(ctx context.Context, name string, data []byte) error
	// List returns the entries directly in the store (not below a further
	// "/"). A folder or prefix that does not exist holds none.
	List(ctx context.Context) ([]Entry, error)
	// Open reads one entry by name.
	Open(ctx context.Context, name string) (io.ReadCloser, error)
	// Path is how an entry is shown and given back to checkpoint import
	// --file: an absolute file path, or s3://bucket/key.
	Path(name string) string
	// String names the store in messages: its folder, or s3://bucket/prefix/.
	String() string
}

// Entry is one file or object of a store.
type Entry struct {
	Name string
	Size int64
}
