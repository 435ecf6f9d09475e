package reset

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/kcltool/kcltool/leasecore"
)

// PositionsFile is what a --from-file holds: the positions to write and the
// entries that cannot be used.
type PositionsFile struct {
	Positions []Position
	Invalid   []InvalidEntry
}

// ReadPositions reads the checkpoints of a --from-file and refuses a file
// with any entry that cannot be used (*InvalidEntriesError in an
// *InputError, every bad entry named).
func ReadPositions(data []byte, name string) ([]Position, error) {
	pf, err := ReadPositionsFile(data, name)
	if err != nil {
		return nil, err
	}
	if len(pf.Invalid) > 0 {
		return nil, &InputError{Err: &InvalidEntriesError{File: name, Entries: pf.Invalid}}
	}
	return pf.Positions, nil
}

// ReadPositionsFile reads the checkpoints of a --from-file: an export (JSON
// or CSV; only its leases count, and it is checked as import checks it), a
// CSV with a header naming leaseKey, checkpoint and subSequenceNumber or
// checkpointSubSequenceNumber in any column order (`leases ls -o csv`
// output is one), or a CSV without header of
// leaseKey,checkpoint[,subSequenceNumber]. A line that cannot be used goes
// to Invalid with its number and why; only a file that is none of these is
// an error (*InputError).
func ReadPositionsFile(data []byte, name string) (*PositionsFile, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if isExport(data) {
		e, err := ReadExport(data)
		if err != nil {
			return nil, inputErrorf("%s: %v", name, err)
		}
		pf := &PositionsFile{Invalid: e.Invalid}
		for _, it := range e.Items {
			if it.Kind == KindLease {
				pf.Positions = append(pf.Positions, Position{LeaseKey: it.LeaseKey, Checkpoint: *it.Checkpoint})
			}
		}
		if len(pf.Positions) == 0 && len(pf.Invalid) == 0 {
			return nil, inputErrorf("%s holds no leases", name)
		}
		return pf, nil
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	var (
		pf    = &PositionsFile{}
		cols  = positionColumns{key: 0, cp: 1, sub: 2, kind: -1}
		seen  = map[string]int{}
		first = true
	)
	for {
		row, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			place := "a line"
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				place = fmt.Sprintf("line %d", pe.StartLine)
			}
			pf.Invalid = append(pf.Invalid, InvalidEntry{Place: place, Reason: "not CSV: " + err.Error()})
			first = false
			continue
		}
		line, _ := r.FieldPos(0)
		if first && containsField(row, "leaseKey") {
			first = false
			if cols, err = headerColumns(row); err != nil {
				return nil, inputErrorf("%s line %d: %v", name, line, err)
			}
			continue
		}
		first = false
		if len(row) == 1 && strings.TrimSpace(row[0]) == "" {
			continue
		}
		pos, skip, err := cols.parse(row)
		if skip {
			continue
		}
		place := fmt.Sprintf("line %d", line)
		if err != nil {
			pf.Invalid = append(pf.Invalid, InvalidEntry{Place: place, LeaseKey: cols.keyOf(row), Reason: err.Error()})
			continue
		}
		if prev, dup := seen[pos.LeaseKey]; dup {
			pf.Invalid = append(pf.Invalid, InvalidEntry{Place: place, LeaseKey: pos.LeaseKey, Reason: fmt.Sprintf("already given on line %d", prev)})
			continue
		}
		seen[pos.LeaseKey] = line
		pf.Positions = append(pf.Positions, pos)
	}
	if len(pf.Positions) == 0 && len(pf.Invalid) == 0 {
		return nil, inputErrorf("%s holds no positions: want leaseKey,checkpoint,subSequenceNumber rows or a kcltool export", name)
	}
	return pf, nil
}

// isExport recognises a kcltool export: a JSON document, or a CSV whose
// header is ExportCSVHeader.
func isExport(data []byte) bool {
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
		return true
	}
	header, err := csv.NewReader(bytes.NewReader(data)).Read()
	return err == nil && strings.Join(header, ",") == strings.Join(ExportCSVHeader, ",")
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

// keyOf is the row's leaseKey, "" when it has none.
func (c positionColumns) keyOf(row []string) string {
	if c.key < 0 || c.key >= len(row) {
		return ""
	}
	return strings.TrimSpace(row[c.key])
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
		return Position{}, false, fmt.Errorf("no checkpoint")
	}
	if !leasecore.ValidCheckpoint(cp) {
		return Position{}, false, fmt.Errorf("checkpoint %q is not a sequence number or TRIM_HORIZON, LATEST, SHARD_END, AT_TIMESTAMP", cp)
	}
	var sub int64
	if s := get(c.sub); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return Position{}, false, fmt.Errorf("subSequenceNumber %q is not a whole number", s)
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
