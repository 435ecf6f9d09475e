package reset

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/kcltool/kcltool/leasecore"
)

// ReadPositions reads the checkpoints of a --from-file: an export (JSON or
// CSV; only its leases count), a CSV with a header naming leaseKey,
// checkpoint and subSequenceNumber or checkpointSubSequenceNumber in any
// column order (`leases ls -o csv` output is one), or a CSV without header
// of leaseKey,checkpoint[,subSequenceNumber]. Errors name the file and line
// and are *InputError.
func ReadPositions(data []byte, name string) ([]Position, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
		e, err := ReadExport(t)
		if err != nil {
			return nil, inputErrorf("%s: %v", name, err)
		}
		var out []Position
		for _, it := range e.Items {
			if it.Kind == KindLease {
				out = append(out, Position{LeaseKey: it.LeaseKey, Checkpoint: *it.Checkpoint})
			}
		}
		return out, nil
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	var (
		out  []Position
		cols = positionColumns{key: 0, cp: 1, sub: 2, kind: -1}
		seen = map[string]int{}
		line = 0
	)
	for {
		row, err := r.Read()
		if err == io.EOF {
			break
		}
		line++
		if err != nil {
			return nil, inputErrorf("%s: %v", name, err)
		}
		if line == 1 && containsField(row, "leaseKey") {
			if cols, err = headerColumns(row); err != nil {
				return nil, inputErrorf("%s line 1: %v", name, err)
			}
			continue
		}
		if len(row) == 1 && strings.TrimSpace(row[0]) == "" {
			continue
		}
		pos, skip, err := cols.parse(row)
		if err != nil {
			return nil, inputErrorf("%s line %d: %v", name, line, err)
		}
		if skip {
			continue
		}
		if prev, dup := seen[pos.LeaseKey]; dup {
			return nil, inputErrorf("%s line %d: lease %s already given on line %d", name, line, pos.LeaseKey, prev)
		}
		seen[pos.LeaseKey] = line
		out = append(out, pos)
	}
	if len(out) == 0 {
		return nil, inputErrorf("%s holds no positions: want leaseKey,checkpoint,subSequenceNumber rows or a kcltool export", name)
	}
	return out, nil
}

// positionColumns are the column indexes of a positions CSV; sub and kind
// are -1 when absent.
type positionColumns struct{ key, cp, sub, kind int }

func headerColumns(header []string) (positionColumns, error) {
	c := positionColumns{key: -1, cp: -1, sub: -1, kind: -1}
	for i, h := range header {
		switch strings.TrimSpace(h) {
		case "leaseKey":
			c.key = i
		case "checkpoint":
			c.cp = i
		case "subSequenceNumber", "checkpointSubSequenceNumber":
			c.sub = i
		case "kind":
			c.kind = i
		}
	}
	if c.cp < 0 {
		return c, fmt.Errorf("the header names leaseKey but no checkpoint column")
	}
	return c, nil
}

// parse reads one row. Rows of an export CSV that are not leases are
// skipped.
func (c positionColumns) parse(row []string) (Position, bool, error) {
	get := func(i int) string {
		if i < 0 || i >= len(row) {
			return ""
		}
		return strings.TrimSpace(row[i])
	}
	if c.kind >= 0 && get(c.kind) != KindLease {
		return Position{}, true, nil
	}
	key, cp := get(c.key), get(c.cp)
	if key == "" {
		return Position{}, false, fmt.Errorf("no leaseKey")
	}
	if cp == "" {
		return Position{}, false, fmt.Errorf("lease %s: no checkpoint", key)
	}
	if !leasecore.ValidCheckpoint(cp) {
		return Position{}, false, fmt.Errorf("lease %s: checkpoint %q is not a sequence number or TRIM_HORIZON, LATEST, SHARD_END, AT_TIMESTAMP", key, cp)
	}
	var sub int64
	if s := get(c.sub); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return Position{}, false, fmt.Errorf("lease %s: subSequenceNumber %q is not a whole number", key, s)
		}
		sub = n
	}
	return Position{LeaseKey: key, Checkpoint: leasecore.SequenceNumber{SequenceNumber: cp, SubSequenceNumber: sub}}, false, nil
}

func containsField(row []string, name string) bool {
	for _, f := range row {
		if strings.TrimSpace(f) == name {
			return true
		}
	}
	return false
}
