package reset

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/leasecore"
)

// ExportFormat and ExportVersion identify an export file. The version goes
// up only when a reader of the old version would misread the new one.
const (
	ExportFormat  = "kcltool-lease-table-export"
	ExportVersion = 1
)

// The kinds of exported items.
const (
	KindLease     = "lease"     // a lease KCL reads
	KindNonLease  = "non-lease" // a KCL 3.x leader lock, migration record, worker metrics...
	KindMalformed = "malformed" // a lease item KCL would fail on
)

// Export is a complete, lossless copy of a lease table: every item as
// DynamoDB returned it, each marked with what it is.
type Export struct {
	Table      string
	ExportedAt time.Time
	Items      []ExportItem

	keys map[string]bool // while reading: the keys seen
}

// ExportItem is one item of an export.
type ExportItem struct {
	LeaseKey string
	Kind     string
	// EntityType is set for non-lease items (KCL 3.5+ marks them).
	EntityType string
	// Checkpoint is set for leases.
	Checkpoint *leasecore.SequenceNumber
	// Error says why a malformed item is malformed.
	Error string
	// Item is the item itself, attribute for attribute.
	Item map[string]types.AttributeValue
	// Lease is Item decoded, for leases.
	Lease leasecore.Lease
}

// NewExport classifies raw items (ScanResult.Items) into an export.
func NewExport(table string, at time.Time, items []map[string]types.AttributeValue) *Export {
	e := &Export{Table: table, ExportedAt: at.UTC()}
	for _, it := range items {
		e.Items = append(e.Items, classify(it))
	}
	return e
}

func classify(item map[string]types.AttributeValue) ExportItem {
	x := ExportItem{LeaseKey: leasecore.ItemKey(item), Item: item}
	if !leasecore.IsLeaseItem(item) {
		x.Kind, x.EntityType = KindNonLease, leasecore.EntityTypeOf(item)
		return x
	}
	l, err := leasecore.DecodeLease(item)
	if err != nil {
		x.Kind, x.Error = KindMalformed, err.Error()
		return x
	}
	x.Kind, x.Lease, x.Checkpoint = KindLease, l, seqPtr(l.Checkpoint)
	return x
}

// Counts returns the number of leases, non-lease items and malformed items.
func (e *Export) Counts() (leases, nonLeases, malformed int) {
	for _, it := range e.Items {
		switch it.Kind {
		case KindLease:
			leases++
		case KindNonLease:
			nonLeases++
		default:
			malformed++
		}
	}
	return
}

// exportHeader is the JSON document around the items.
type exportHeader struct {
	Format     string          `json:"format"`
	Version    int             `json:"version"`
	Table      string          `json:"table"`
	ExportedAt string          `json:"exportedAt"`
	Counts     exportCounts    `json:"counts"`
	Items      []exportItemRaw `json:"items"`
}

type exportCounts struct {
	Leases    int `json:"leases"`
	NonLeases int `json:"nonLeases"`
	Malformed int `json:"malformed"`
}

// exportItemRaw is one item line: the marks first, then the item in
// DynamoDB JSON. Every key is always present, null where it does not apply
// (docs/json.md); the reader accepts the keys missing too, as older
// exports have them.
type exportItemRaw struct {
	LeaseKey          string          `json:"leaseKey"`
	Kind              string          `json:"kind"`
	EntityType        *string         `json:"entityType"`
	Checkpoint        *string         `json:"checkpoint"`
	SubSequenceNumber *int64          `json:"subSequenceNumber"`
	Error             *string         `json:"error"`
	Item              json.RawMessage `json:"item"`
}

// WriteJSON writes the export as one JSON document with one item per line,
// so that two exports diff line by line and jq reads it whole.
func (e *Export) WriteJSON(w io.Writer) error {
	bw := bufio.NewWriter(w)
	l, n, m := e.Counts()
	fmt.Fprintf(bw, "{\n  \"format\": %q,\n  \"version\": %d,\n  \"table\": %s,\n  \"exportedAt\": %q,\n", ExportFormat, ExportVersion, jsonString(e.Table), stamp(e.ExportedAt))
	fmt.Fprintf(bw, "  \"counts\": {\"leases\": %d, \"nonLeases\": %d, \"malformed\": %d},\n  \"items\": [", l, n, m)
	for i, it := range e.Items {
		line, err := it.marshal()
		if err != nil {
			return err
		}
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n    ")
		bw.Write(line)
	}
	if len(e.Items) > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteString("]\n}\n")
	return bw.Flush()
}

func (it ExportItem) marshal() ([]byte, error) {
	item, err := leasecore.MarshalItemJSON(it.Item)
	if err != nil {
		return nil, fmt.Errorf("export item %q: %w", it.LeaseKey, err)
	}
	r := exportItemRaw{LeaseKey: it.LeaseKey, Kind: it.Kind, EntityType: nullIfEmpty(it.EntityType), Error: nullIfEmpty(it.Error), Item: item}
	if it.Checkpoint != nil {
		cp, sub := it.Checkpoint.SequenceNumber, it.Checkpoint.SubSequenceNumber
		r.Checkpoint, r.SubSequenceNumber = &cp, &sub
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// ExportCSVHeader is the header of a CSV export. Its first three columns
// are a positions file (checkpoint reset --from-file reads them); item
// holds the whole item in DynamoDB JSON, which makes the CSV as lossless as
// the JSON form.
var ExportCSVHeader = []string{"leaseKey", "checkpoint", "subSequenceNumber", "kind", "item"}

// WriteCSV writes the export as CSV, one item per row.
func (e *Export) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(ExportCSVHeader); err != nil {
		return err
	}
	for _, it := range e.Items {
		item, err := leasecore.MarshalItemJSON(it.Item)
		if err != nil {
			return fmt.Errorf("export item %q: %w", it.LeaseKey, err)
		}
		cp, sub := "", ""
		if it.Checkpoint != nil {
			cp, sub = it.Checkpoint.SequenceNumber, strconv.FormatInt(it.Checkpoint.SubSequenceNumber, 10)
		}
		if err := cw.Write([]string{it.LeaseKey, cp, sub, it.Kind, string(item)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// ReadExport reads an export in either form. The marks in the file are not
// trusted: every item is classified again from its attributes.
func ReadExport(data []byte) (*Export, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
		return readExportJSON(t)
	}
	return readExportCSV(data)
}

func readExportJSON(data []byte) (*Export, error) {
	var h exportHeader
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, fmt.Errorf("not a kcltool export: %w", err)
	}
	if h.Format != ExportFormat {
		return nil, fmt.Errorf("not a kcltool export (format %q, want %q)", h.Format, ExportFormat)
	}
	if h.Version != ExportVersion {
		return nil, fmt.Errorf("export version %d is not supported by this kcltool (it reads version %d)", h.Version, ExportVersion)
	}
	at, err := time.Parse(time.RFC3339Nano, h.ExportedAt)
	if err != nil {
		return nil, fmt.Errorf("export: exportedAt %q: %w", h.ExportedAt, err)
	}
	e := &Export{Table: h.Table, ExportedAt: at}
	for i, r := range h.Items {
		item, err := leasecore.UnmarshalItemJSON(r.Item)
		if err != nil {
			return nil, fmt.Errorf("export item %d (%s): %w", i+1, r.LeaseKey, err)
		}
		if err := e.add(item, r.LeaseKey); err != nil {
			return nil, fmt.Errorf("export item %d: %w", i+1, err)
		}
	}
	return e, nil
}

func readExportCSV(data []byte) (*Export, error) {
	rows, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("not a kcltool export: %w", err)
	}
	if len(rows) == 0 || len(rows[0]) != len(ExportCSVHeader) || rows[0][4] != "item" || rows[0][0] != "leaseKey" {
		return nil, errors.New("not a kcltool export: a CSV export starts with the header " + joinComma(ExportCSVHeader))
	}
	e := &Export{}
	for i, row := range rows[1:] {
		item, err := leasecore.UnmarshalItemJSON([]byte(row[4]))
		if err != nil {
			return nil, fmt.Errorf("export line %d (%s): %w", i+2, row[0], err)
		}
		if err := e.add(item, row[0]); err != nil {
			return nil, fmt.Errorf("export line %d: %w", i+2, err)
		}
	}
	return e, nil
}

func (e *Export) add(item map[string]types.AttributeValue, key string) error {
	x := classify(item)
	if x.LeaseKey != key {
		return fmt.Errorf("leaseKey %q does not match the item's leaseKey %q", key, x.LeaseKey)
	}
	if e.keys == nil {
		e.keys = map[string]bool{}
	}
	if e.keys[key] {
		return fmt.Errorf("leaseKey %q appears twice", key)
	}
	e.keys[key] = true
	e.Items = append(e.Items, x)
	return nil
}

// ExportTable reads the whole table, strongly consistent, into an export.
func ExportTable(ctx context.Context, api leasecore.ScanAPI, table string, clock leasecore.Clock) (*Export, error) {
	if clock == nil {
		clock = leasecore.RealClock()
	}
	at := clock.Now()
	scan, err := leasecore.ScanTable(ctx, api, table, leasecore.ScanOptions{ConsistentRead: true, KeepItems: true})
	if err != nil {
		return nil, fmt.Errorf("scan lease table %q: %w", table, err)
	}
	return NewExport(table, at, scan.Items), nil
}
