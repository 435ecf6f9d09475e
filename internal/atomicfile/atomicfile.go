// Package atomicfile writes a file whole or not at all.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write writes data to path so that path holds either its old content or
// all of data, never a part: a temporary file in the same folder, synced,
// then renamed over path, then the folder synced. A backup that a crash
// could leave half-written would be no backup.
func Write(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		defer d.Close()
		return d.Sync()
	}
	return nil
}
