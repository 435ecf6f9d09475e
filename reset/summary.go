package reset

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// ExportSummary is what the header of a JSON export says about it.
type ExportSummary struct {
	Table                        string
	ExportedAt                   time.Time
	Leases, NonLeases, Malformed int
}

// ReadExportSummary reads the header of a JSON export (format, version,
// table, exportedAt, counts) and stops where the items begin, so that
// listing a folder of backups of large tables reads a few bytes of each.
func ReadExportSummary(r io.Reader) (ExportSummary, error) {
	var s ExportSummary
	dec := json.NewDecoder(r)
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return s, errors.New("not a kcltool export: not a JSON document")
	}
	var h exportHeader
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return s, fmt.Errorf("not a kcltool export: %w", err)
		}
		key, _ := t.(string)
		if key == "items" {
			break
		}
		var dst any
		switch key {
		case "format":
			dst = &h.Format
		case "version":
			dst = &h.Version
		case "table":
			dst = &h.Table
		case "exportedAt":
			dst = &h.ExportedAt
		case "counts":
			dst = &h.Counts
		default:
			dst = new(json.RawMessage)
		}
		if err := dec.Decode(dst); err != nil {
			return s, fmt.Errorf("not a kcltool export: %s: %w", key, err)
		}
		seen[key] = true
	}
	if h.Format != ExportFormat {
		return s, fmt.Errorf("not a kcltool export (format %q, want %q)", h.Format, ExportFormat)
	}
	if h.Version != ExportVersion {
		return s, fmt.Errorf("export version %d is not supported by this kcltool (it reads version %d)", h.Version, ExportVersion)
	}
	if !seen["counts"] {
		return s, errors.New("export: no counts before the items")
	}
	at, err := time.Parse(time.RFC3339Nano, h.ExportedAt)
	if err != nil {
		return s, fmt.Errorf("export: exportedAt %q: %w", h.ExportedAt, err)
	}
	return ExportSummary{Table: h.Table, ExportedAt: at, Leases: h.Counts.Leases, NonLeases: h.Counts.NonLeases, Malformed: h.Counts.Malformed}, nil
}
