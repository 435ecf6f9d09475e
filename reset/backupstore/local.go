package backupstore

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kcltool/kcltool/internal/atomicfile"
)

// Local is a folder on this machine.
type Local struct{ Dir string }

// Put writes the file atomically (atomicfile.Write).
func (l Local) Put(_ context.Context, name string, data []byte) error {
	return atomicfile.Write(filepath.Join(l.Dir, name), data)
}

// List returns the regular files of the folder; a missing folder has none.
func (l Local) List(context.Context) ([]Entry, error) {
	des, err := os.ReadDir(l.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, d := range des {
		if d.IsDir() {
			continue
		}
		// Stat, not the entry's own Info: a link to a backup counts.
		info, err := os.Stat(filepath.Join(l.Dir, d.Name()))
		if err != nil || !info.Mode().IsRegular() {
			continue // removed since the listing, a broken link, a socket
		}
		out = append(out, Entry{Name: d.Name(), Size: info.Size()})
	}
	return out, nil
}

// Open opens the file.
func (l Local) Open(_ context.Context, name string) (io.ReadCloser, error) {
	return os.Open(filepath.Join(l.Dir, name))
}

// Path is the file's path in Dir as given (absolute when Dir is).
func (l Local) Path(name string) string { return filepath.Join(l.Dir, name) }

func (l Local) String() string { return l.Dir }
