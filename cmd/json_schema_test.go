package cmd

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"github.com/kcltool/kcltool/cmd/checkpoint"
	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/cmd/consumers"
	"github.com/kcltool/kcltool/cmd/doctor"
	"github.com/kcltool/kcltool/cmd/leases"
	"github.com/kcltool/kcltool/cmd/migration"
	"github.com/kcltool/kcltool/cmd/run"
	"github.com/kcltool/kcltool/cmd/shards"
	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/testenv/kcl3fleet"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// structPaths lists the JSON key paths of a struct type the way
// jsonSchemas writes them: nested objects as "a.b", objects in lists as
// "a[].b". Types with their own MarshalJSON (OptString, time.Time) are
// leaves.
func structPaths(t reflect.Type, prefix string) []string {
	marshaler := reflect.TypeFor[json.Marshaler]()
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		path := prefix + name
		out = append(out, path)
		ft := f.Type
		list := false
		if ft.Kind() == reflect.Slice {
			ft, list = ft.Elem(), true
		}
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() != reflect.Struct || ft.Implements(marshaler) || reflect.PointerTo(ft).Implements(marshaler) {
			continue
		}
		if list {
			out = append(out, structPaths(ft, path+"[].")...)
		} else {
			out = append(out, structPaths(ft, path+".")...)
		}
	}
	return out
}

func schemaPaths(name string) []string {
	var out []string
	for _, k := range jsonSchema(name).Keys {
		out = append(out, k.Path)
	}
	return out
}

// TestJSONSchemaMatchesStructs: each JSON struct has exactly the keys
// jsonSchemas documents for it, in the same order. The export is written
// by package reset and checked end to end instead.
func TestJSONSchemaMatchesStructs(t *testing.T) {
	for name, v := range map[string]any{
		"leases ls": leases.LeaseJSON{}, "leases ls --non-leases": leases.NonLeaseJSON{}, "leases owners": leases.OwnerJSON{},
		"checkpoint diff": checkpoint.LagJSON{}, "shards lineage": shards.LineageJSON{}, "doctor": doctor.ReportJSON{},
		"checkpoint reset": checkpoint.ChangeJSON{}, "plan file": checkpoint.PlanFileJSON{}, "checkpoint backups ls": checkpoint.BackupJSON{}, "run --print-config": run.RunConfigJSON{},
		"consumers ls": consumers.ConsumerJSON{}, "migration status": migration.StatusJSON{}, "migration start": migration.PlanJSON{},
		"version": VersionJSON{}, "watch events": cmdutil.WatchEventJSON{},
	} {
		got, want := structPaths(reflect.TypeOf(v), ""), schemaPaths(name)
		if !slices.Equal(got, want) {
			t.Errorf("%s: the struct's keys\n  %v\ndiffer from jsonSchemas\n  %v", name, got, want)
		}
	}
	// Every key documented once, with a known type.
	types := []string{tString, tStringOrNull, tNumber, tNumberOrNull, tBoolean, tStrings, tNumbers, tObject,
		tObjectOrNull, tObjects, tNumberMap, tDynamoDBItem, tValue, tRow}
	for _, c := range jsonSchemas {
		seen := map[string]bool{}
		for _, k := range c.Keys {
			if seen[k.Path] || !slices.Contains(types, k.Type) || k.Doc == "" {
				t.Errorf("%s: key %q duplicated, of unknown type %q or without a meaning", c.Name, k.Path, k.Type)
			}
			seen[k.Path] = true
		}
	}
}

// TestJSONDocsPage: the JSON page of the manual shows jsonSchemas as they
// are. -update rewrites the generated part (or writes the page).
func TestJSONDocsPage(t *testing.T) {
	path := filepath.Join("..", "docs", "json.md")
	want := jsonSchemaMarkdown()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) && !*update {
		t.Fatalf("%s is missing: run go test ./cmd -run TestJSONDocsPage -update", path)
	}
	page := string(data)
	if err != nil {
		page = jsonDocsIntro + "\n"
	}
	want = strings.TrimSuffix(want, "\n")
	begin, end := strings.Index(page, jsonDocBegin), strings.Index(page, jsonDocEnd)
	var got string
	if begin >= 0 && end > begin {
		end += len(jsonDocEnd)
		got = page[begin:end]
	}
	if got == want {
		return
	}
	if !*update {
		t.Fatalf("%s is not what cmd/json_schema.go renders: run go test ./cmd -run TestJSONDocsPage -update", path)
	}
	if begin >= 0 && end > begin {
		page = page[:begin] + want + page[end:]
	} else {
		page = strings.TrimRight(page, "\n") + "\n\n" + want + "\n"
	}
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
}

// jsonDocsIntro heads docs/json.md when -update has to write the page.
const jsonDocsIntro = `# JSON output

Every read command prints JSON with ` + "`-o json`" + `. Keys are the KCL attribute
names wherever the value is one. Hash keys and sequence numbers are strings
(they overflow JSON numbers); other numbers are numbers. Lists of objects are
printed one object per line, so the output suits both jq and grep.`

// schemaChecker checks decoded JSON against a jsonCommand and remembers
// which documented keys it has reached, so a test can tell a key that was
// never checked (inside a list that was always empty, say) from one that
// passed.
type schemaChecker struct {
	t       *testing.T
	reached map[string]map[string]bool // command → path → reached
}

func parentPath(p string) string {
	i := strings.LastIndex(p, ".")
	if i < 0 {
		return ""
	}
	return p[:i]
}

func (c *schemaChecker) object(cmd jsonCommand, where string, obj map[string]any, parent string) {
	c.t.Helper()
	if c.reached[cmd.Name] == nil {
		c.reached[cmd.Name] = map[string]bool{}
	}
	documented := map[string]bool{}
	for _, k := range cmd.Keys {
		if parentPath(k.Path) != parent {
			continue
		}
		leaf := k.Path[strings.LastIndex(k.Path, ".")+1:]
		documented[leaf] = true
		v, ok := obj[leaf]
		if !ok {
			c.t.Errorf("%s: documented key %q missing in %s", cmd.Name, k.Path, where)
			continue
		}
		c.reached[cmd.Name][k.Path] = true
		if !jsonTypeIs(v, k.Type) {
			c.t.Errorf("%s: key %q is %#v in %s, documented as %s", cmd.Name, k.Path, v, where, k.Type)
			continue
		}
		switch v := v.(type) {
		case map[string]any:
			if k.Type == tObject || k.Type == tObjectOrNull {
				c.object(cmd, where, v, k.Path)
			}
		case []any:
			if k.Type == tObjects {
				for _, e := range v {
					c.object(cmd, where, e.(map[string]any), k.Path+"[]")
				}
			}
		}
	}
	for key := range obj {
		if !documented[key] {
			c.t.Errorf("%s: key %q in %s is not documented in jsonSchemas", cmd.Name, strings.TrimPrefix(parent+"."+key, "."), where)
		}
	}
}

// document checks a whole output: an array of objects, or one object.
func (c *schemaChecker) document(name, where, out string) {
	c.t.Helper()
	cmd := jsonSchema(name)
	var doc any
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&doc); err != nil {
		c.t.Fatalf("%s: %s is not JSON: %v\n%s", name, where, err, out)
	}
	switch d := doc.(type) {
	case []any:
		if len(d) == 0 {
			c.t.Errorf("%s: %s is an empty array: nothing checked", name, where)
		}
		for i, e := range d {
			obj, ok := e.(map[string]any)
			if !ok {
				c.t.Fatalf("%s: element %d of %s is not an object", name, i, where)
			}
			c.object(cmd, where, obj, "")
		}
	case map[string]any:
		c.object(cmd, where, d, "")
	default:
		c.t.Fatalf("%s: %s is neither an array nor an object", name, where)
	}
}

func jsonTypeIs(v any, typ string) bool {
	isString := func(v any) bool { _, ok := v.(string); return ok }
	isNumber := func(v any) bool { _, ok := v.(float64); return ok }
	listOf := func(v any, elem func(any) bool) bool {
		l, ok := v.([]any)
		if !ok {
			return false // nil too: lists are never null
		}
		for _, e := range l {
			if !elem(e) {
				return false
			}
		}
		return true
	}
	switch typ {
	case tString:
		return isString(v)
	case tStringOrNull:
		return v == nil || isString(v)
	case tNumber:
		return isNumber(v)
	case tNumberOrNull:
		return v == nil || isNumber(v)
	case tBoolean:
		_, ok := v.(bool)
		return ok
	case tStrings:
		return listOf(v, isString)
	case tNumbers:
		return listOf(v, isNumber)
	case tObject, tDynamoDBItem, tRow:
		_, ok := v.(map[string]any)
		return ok
	case tValue:
		return true // any JSON value, null included
	case tObjectOrNull:
		_, ok := v.(map[string]any)
		return ok || v == nil
	case tObjects:
		return listOf(v, func(e any) bool { _, ok := e.(map[string]any); return ok })
	case tNumberMap:
		m, ok := v.(map[string]any)
		for _, e := range m {
			ok = ok && isNumber(e)
		}
		return ok
	}
	return false
}

// checkCSV checks a -o csv output: the documented header, and no "-" or
// "no lease" standing in for an empty value.
func checkCSV(t *testing.T, name, where, out string) {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("%s: %s is not CSV: %v\n%s", name, where, err, out)
	}
	if want := jsonSchema(name).CSV; !slices.Equal(recs[0], want) {
		t.Errorf("%s: %s header %v, documented %v", name, where, recs[0], want)
	}
	if len(recs) == 1 {
		t.Errorf("%s: %s has no rows: nothing checked", name, where)
	}
	for _, r := range recs[1:] {
		for i, f := range r {
			if f == "-" || f == "no lease" {
				t.Errorf("%s: %s column %s is %q, want an empty field", name, where, recs[0][i], f)
			}
		}
	}
}

// TestJSONKeysAlwaysPresent runs every command that prints JSON through the
// real binary against the local servers, and checks each object against
// jsonSchemas: every documented key present (null when empty), of its
// documented type, and no undocumented key. Every documented key must be
// reached at least once, so nested keys are checked too. The CSV forms are
// checked for their documented headers and empty fields on the way.
func TestJSONKeysAlwaysPresent(t *testing.T) {
	t.Parallel() // long, and mostly waiting on the local servers: it overlaps others on CI's two cores
	s := everyStateScenario(t)
	// KCL 3.5 non-lease items: a leader lock and worker-b's metrics.
	seedFiles(t, s.ddb, s.table, fixturesDir(t), "f6-kcl35-non-lease.jsonl")
	c := &schemaChecker{t: t, reached: map[string]map[string]bool{}}
	run := func(want int, args ...string) string {
		t.Helper()
		out, errOut, code := s.kcltool(args...)
		if code != want {
			t.Fatalf("kcltool %s: exit %d, want %d\n%s", strings.Join(args, " "), code, want, errOut)
		}
		return out
	}
	both := func(name string, want int, args ...string) {
		t.Helper()
		where := "kcltool " + strings.Join(args, " ")
		c.document(name, where, run(want, append(args, "-o", "json")...))
		if jsonSchema(name).CSV != nil {
			checkCSV(t, name, where, run(want, append(args, "-o", "csv")...))
		}
	}
	app, stream := []string{"--app", s.table}, []string{"--stream", s.stream}

	both("leases ls", 0, append([]string{"leases", "ls"}, app...)...)
	both("leases ls", 0, append([]string{"leases", "ls", "--sample", "100ms"}, app...)...)
	// Attributes the scenario's leases lack: a KCL 3.x handoff, a
	// multi-stream lease, a parent at SHARD_END with its children.
	fixtures := seedTable(t)
	seedFiles(t, s.ddb, fixtures, fixturesDir(t), "f2b-kcl3-handoff.json", "f3-shard-end-parent.json", "f4-child-waiting.json", "f5-multistream.json")
	both("leases ls", 0, "leases", "ls", "--app", fixtures)
	both("leases ls --non-leases", 0, append([]string{"leases", "ls", "--non-leases"}, app...)...)
	both("leases owners", 0, append([]string{"leases", "owners"}, app...)...)
	both("leases owners", 0, append([]string{"leases", "owners", "--sample", "100ms"}, app...)...)
	both("checkpoint diff", 0, append(append([]string{"checkpoint", "diff"}, app...), stream...)...)
	both("shards lineage", 0, append(append([]string{"shards", "lineage"}, app...), stream...)...)
	both("shards lineage", 0, append([]string{"shards", "lineage"}, stream...)...)
	// An enhanced fan-out consumer on the stream (consumers_test.go).
	s.register("json-keys")
	both("consumers ls", 0, append([]string{"consumers", "ls"}, stream...)...)
	// migration status: the scenario's 2.x table (nulls), and a fleet
	// upgrading from 2.x with tm INIT (the checks, both steps, the waits).
	both("migration status", 0, append([]string{"migration", "status"}, app...)...)
	up := kcl3fleet.Setup(t, s.ddb, kcl3fleet.Layout{Kind: kcl3fleet.SideTables, ClientVersion: coordination.ClientVersionUpgradeFrom2X, TableMigration: kcl3fleet.TableMigrationInit})
	both("migration status", 0, "migration", "status", "--app", up.Tables.Lease)
	// migration start | rollback | finalize plans (dry runs): start on the
	// 2.x table (a create, the index, the checks to come), rollback of the
	// upgrading fleet (an update from cv, the wait), finalize refused there
	// (blockers) and with nothing to do on a final fleet.
	both("migration start", 0, append([]string{"migration", "start"}, app...)...)
	both("migration start", 0, "migration", "rollback", "--app", up.Tables.Lease)
	both("migration start", 3, "migration", "finalize", "--app", up.Tables.Lease)
	final := kcl3fleet.Setup(t, s.ddb, kcl3fleet.Layout{Kind: kcl3fleet.NewApp})
	both("migration start", 0, "migration", "finalize", "--app", final.Tables.Lease)
	// Applied (after): the upgrading fleet rolled back.
	c.document("migration start", "migration rollback --execute",
		run(0, "migration", "rollback", "--app", up.Tables.Lease, "--execute", "--index-wait", "0s", "-o", "json"))
	doctor := []string{"doctor", "--failover-time", "300ms", "--window", "900ms", "--no-cloudwatch", "--fail-on", "never"}
	both("doctor", 0, append(append(doctor, app...), stream...)...)
	c.document("doctor", "doctor without --stream", run(0, append(append(doctor, app...), "-o", "json")...))

	// The export, and import reading it back with its nulls.
	dir := t.TempDir()
	export := filepath.Join(dir, "export.json")
	c.document("checkpoint export", "checkpoint export", run(0, append([]string{"checkpoint", "export"}, app...)...))
	checkCSV(t, "checkpoint export", "checkpoint export -o csv", run(0, append([]string{"checkpoint", "export", "-o", "csv"}, app...)...))
	run(0, append([]string{"checkpoint", "export", "--file", export}, app...)...)
	if data, err := os.ReadFile(export); err != nil || !bytes.Contains(data, []byte(`"entityType":null`)) {
		t.Fatalf("the export has no null entityType (%v):\n%s", err, data)
	}
	both("checkpoint reset", 0, append([]string{"checkpoint", "import", "--file", export}, app...)...)

	// A reset, dry and applied: rows with results, and the plan file.
	reset := append(append([]string{"checkpoint", "reset", "--to", "trim-horizon"}, app...), stream...)
	both("checkpoint reset", 0, reset...)
	backups := filepath.Join(dir, "backups")
	if err := os.Mkdir(backups, 0o755); err != nil {
		t.Fatal(err)
	}
	c.document("checkpoint reset", "checkpoint reset --execute",
		run(0, append(reset, "--execute", "--force", "--sample", "100ms", "--backup-dir", backups, "-o", "json")...))
	plans, _ := filepath.Glob(filepath.Join(backups, "*.plan.json"))
	if len(plans) != 1 {
		t.Fatalf("want one plan file in %s, got %v", backups, plans)
	}
	data, err := os.ReadFile(plans[0])
	if err != nil {
		t.Fatal(err)
	}
	c.document("plan file", plans[0], string(data))
	both("checkpoint backups ls", 0, "checkpoint", "backups", "ls", "--backup-dir", backups)

	// run's resolved configuration, from a properties file with a key it
	// records for later and one it does not know (a warning).
	// It reads the table's mode, a recorded call whose policy is computed
	// from the file again after the tests.
	props := filepath.Join(dirKeptForCallCheck(t), "app.properties")
	if err := os.WriteFile(props, []byte("applicationName = "+s.table+"\nstreamName = "+s.stream+
		"\ncallProcessRecordsEvenForEmptyRecordList = true\nnoSuchKey = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.document("run --print-config", "run --properties --print-config",
		run(0, "run", "--properties", props, "--exec", "true", "--print-config", "-o", "json"))
	c.document("version", "version -o json", run(0, "version", "-o", "json"))

	for _, cmd := range jsonSchemas {
		if cmd.Name == "watch events" {
			continue // a watch never ends by itself: TestWatchJSONEvents runs one and checks these
		}
		for _, k := range cmd.Keys {
			if !c.reached[cmd.Name][k.Path] {
				t.Errorf("%s: documented key %q never reached: no output exercised it", cmd.Name, k.Path)
			}
		}
	}
}
