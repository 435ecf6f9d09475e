package cmdutil

import "github.com/kcltool/kcltool/internal/atomicfile"

// WriteFileAtomic writes data to path whole or not at all
// (atomicfile.Write; the backups' local store, in reset/backupstore, uses
// the same).
func WriteFileAtomic(path string, data []byte) error { return atomicfile.Write(path, data) }
