package reset

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/kcltool/kcltool/internal/clock"
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
	// Invalid are the entries of a file that could not be used (ReadExport).
	Invalid []InvalidEntry

	keys  map[string]string // while reading: the keys of Items, with their place
	named map[string]bool   // while reading: every key the file names
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

// ReadExport reads an export in either form. What is wrong with the file
// as a whole (not an export, another version) is an error; an entry that
// cannot be used goes to Invalid, each with its place, key and reason, so
// that a caller can name them all and refuse the file (or skip them). The
// marks are checked against the items: an entry marked a lease must be a
// lease KCL reads, with the checkpoint it claims; entries marked malformed
// or non-lease are carried as they are.
func ReadExport(data []byte) (*Export, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
		return readExportJSON(data)
	}
	return readExportCSV(data)
}

// fileEntry is one entry as a file has it, before it is checked.
type fileEntry struct {
	place           string
	key, kind       string
	checkpoint, sub *string // the marks, nil when absent
	item            []byte
}

func readExportJSON(data []byte) (*Export, error) {
	var h struct {
		Format     string            `json:"format"`
		Version    int               `json:"version"`
		Table      string            `json:"table"`
		ExportedAt string            `json:"exportedAt"`
		Items      []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(data, &h); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("not a kcltool export: line %d: %w", lineAt(data, int(se.Offset)), err)
		}
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
	lines := itemLines(data, len(h.Items))
	e := &Export{Table: h.Table, ExportedAt: at}
	for i, raw := range h.Items {
		fe := fileEntry{place: fmt.Sprintf("item %d", i+1)}
		if lines[i] > 0 {
			fe.place = fmt.Sprintf("line %d, item %d", lines[i], i+1)
		}
		var r map[string]json.RawMessage
		if err := json.Unmarshal(raw, &r); err != nil {
			e.invalid(fe, "not an object with leaseKey, kind and item")
			continue
		}
		str := func(name string) (*string, bool) {
			v, ok := r[name]
			if !ok || string(v) == "null" {
				return nil, true
			}
			var s string
			if json.Unmarshal(v, &s) != nil {
				return nil, false
			}
			return &s, true
		}
		key, ok1 := str("leaseKey")
		kind, ok2 := str("kind")
		cp, ok3 := str("checkpoint")
		if key != nil {
			fe.key = *key
		}
		if kind != nil {
			fe.kind = *kind
		}
		fe.checkpoint, fe.item = cp, r["item"]
		if v, ok := r["subSequenceNumber"]; ok && string(v) != "null" {
			s := string(v)
			fe.sub = &s
		}
		if !ok1 || !ok2 || !ok3 {
			e.invalid(fe, "leaseKey, kind and checkpoint must be strings")
			continue
		}
		e.addEntry(fe)
	}
	return e, nil
}

// itemLines finds the line each item of a JSON export starts on (0 when
// it cannot tell): a file of many entries is fixed by line number.
func itemLines(data []byte, n int) []int {
	out := make([]int, n)
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return out
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return out
		}
		if t != "items" {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return out
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('[') {
			return out
		}
		for i := 0; dec.More() && i < n; i++ {
			off := int(dec.InputOffset())
			for off < len(data) && (data[off] == ',' || data[off] == ' ' || data[off] == '\n' || data[off] == '\r' || data[off] == '\t') {
				off++
			}
			out[i] = lineAt(data, off)
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return out
			}
		}
		return out
	}
	return out
}

func lineAt(data []byte, off int) int {
	if off > len(data) {
		off = len(data)
	}
	return bytes.Count(data[:off], []byte("\n")) + 1
}

func readExportCSV(data []byte) (*Export, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err != nil || len(header) != len(ExportCSVHeader) || header[4] != "item" || header[0] != "leaseKey" {
		return nil, errors.New("not a kcltool export: a CSV export starts with the header " + joinComma(ExportCSVHeader))
	}
	e := &Export{}
	for {
		row, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			fe := fileEntry{place: "a line"}
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				fe.place = fmt.Sprintf("line %d", pe.StartLine)
			}
			e.invalid(fe, "not CSV: "+err.Error())
			continue
		}
		line, _ := r.FieldPos(0)
		fe := fileEntry{place: fmt.Sprintf("line %d", line)}
		if len(row) > 0 {
			fe.key = row[0]
		}
		if len(row) != len(ExportCSVHeader) {
			e.invalid(fe, fmt.Sprintf("%d columns, want %d (%s)", len(row), len(ExportCSVHeader), joinComma(ExportCSVHeader)))
			continue
		}
		fe.kind, fe.item = row[3], []byte(row[4])
		if row[1] != "" {
			fe.checkpoint = &row[1]
		}
		if row[2] != "" {
			fe.sub = &row[2]
		}
		e.addEntry(fe)
	}
	return e, nil
}

// invalid records an entry that cannot be used. Its key still counts as
// named by the file: import --prune never deletes it.
func (e *Export) invalid(fe fileEntry, why string) {
	e.Invalid = append(e.Invalid, InvalidEntry{Place: fe.place, LeaseKey: fe.key, Reason: why})
	e.mention(fe.key)
}

func (e *Export) mention(key string) {
	if key == "" {
		return
	}
	if e.named == nil {
		e.named = map[string]bool{}
	}
	e.named[key] = true
}

// addEntry checks one entry and adds it to Items or Invalid.
func (e *Export) addEntry(fe fileEntry) {
	if len(fe.item) == 0 || string(fe.item) == "null" {
		e.invalid(fe, "no item")
		return
	}
	item, err := leasecore.UnmarshalItemJSON(fe.item)
	if err != nil {
		e.invalid(fe, "the item is not DynamoDB JSON: "+err.Error())
		return
	}
	x := classify(item)
	e.mention(x.LeaseKey)
	switch {
	case fe.key == "" && x.LeaseKey == "":
		e.invalid(fe, "no leaseKey")
		return
	case fe.key != x.LeaseKey:
		e.invalid(fe, fmt.Sprintf("leaseKey %q does not match the item's leaseKey %q", fe.key, x.LeaseKey))
		return
	}
	if first, dup := e.keys[fe.key]; dup {
		e.invalid(fe, "leaseKey appears twice (first at "+first+")")
		return
	}
	switch fe.kind {
	case KindMalformed:
		// Recorded malformed by the export: carried as it is, never written.
		x.Kind, x.Lease, x.Checkpoint = KindMalformed, leasecore.Lease{}, nil
		if x.Error == "" {
			x.Error = "marked malformed in the export"
		}
	case KindNonLease:
		x.Kind, x.Lease, x.Checkpoint = KindNonLease, leasecore.Lease{}, nil
	case KindLease, "":
		if why := checkLeaseEntry(fe, x); why != "" {
			e.invalid(fe, why)
			return
		}
	default:
		e.invalid(fe, fmt.Sprintf("kind %q is none of %s, %s, %s", fe.kind, KindLease, KindNonLease, KindMalformed))
		return
	}
	if e.keys == nil {
		e.keys = map[string]string{}
	}
	e.keys[fe.key] = fe.place
	e.Items = append(e.Items, x)
}

// checkLeaseEntry says why an entry marked a lease (or not marked) cannot
// be restored, "" when it can.
func checkLeaseEntry(fe fileEntry, x ExportItem) string {
	switch {
	case x.Kind == KindNonLease && fe.kind == "":
		return "" // an older export without marks: the item says what it is
	case x.Kind == KindNonLease:
		return fmt.Sprintf("marked a lease, but the item is a non-lease item (entityType %q)", x.EntityType)
	case x.Kind == KindMalformed:
		return "KCL could not read the item: " + x.Error
	}
	if fe.checkpoint != nil && *fe.checkpoint != x.Checkpoint.SequenceNumber {
		return fmt.Sprintf("checkpoint %q, but the item's checkpoint is %q: the file was changed by hand?", *fe.checkpoint, x.Checkpoint.SequenceNumber)
	}
	if fe.sub != nil && *fe.sub != strconv.FormatInt(x.Checkpoint.SubSequenceNumber, 10) {
		return fmt.Sprintf("subSequenceNumber %s, but the item's is %d: the file was changed by hand?", *fe.sub, x.Checkpoint.SubSequenceNumber)
	}
	return ""
}

// Names reports whether the file names the key anywhere: a usable entry,
// one marked malformed or non-lease, or one that could not be used.
func (e *Export) Names(key string) bool {
	if e.named[key] {
		return true
	}
	for _, it := range e.Items {
		if it.LeaseKey == key {
			return true
		}
	}
	return false
}

// UnnamedInvalid returns the invalid entries whose leaseKey cannot be read.
func (e *Export) UnnamedInvalid() []InvalidEntry {
	var out []InvalidEntry
	for _, it := range e.Invalid {
		if it.LeaseKey == "" {
			out = append(out, it)
		}
	}
	return out
}

// ExportTable reads the whole table, strongly consistent, into an export.
func ExportTable(ctx context.Context, api leasecore.ScanAPI, table string, clk clock.Clock) (*Export, error) {
	if clk == nil {
		clk = clock.RealClock()
	}
	at := clk.Now()
	scan, err := leasecore.ScanTable(ctx, api, table, leasecore.ScanOptions{ConsistentRead: true, KeepItems: true})
	if err != nil {
		return nil, fmt.Errorf("scan lease table %q: %w", table, err)
	}
	return NewExport(table, at, scan.Items), nil
}
