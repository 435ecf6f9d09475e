package cmd

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/kcltool/kcltool/cmd/run"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// printConfigMode runs the binary's run --print-config -o json for app and
// returns the lease-assignment row's value, source and note.
func printConfigMode(t *testing.T, s e2eStack, app string, env ...string) (value, source, note string) {
	t.Helper()
	args := []string{"run", "--app", app, "--stream", s.stream, "--exec", "cat", "--print-config", "-o", "json"}
	cmd := exec.Command(kcltoolBinary(t), args...)
	cmd.Env = recordCalls(t, args, append(append(os.Environ(), emulator.Env(t)...), env...))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("print-config for %s: %v\n%s", app, err, out)
	}
	var doc run.RunConfigJSON
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, r := range doc.Settings {
		if r.Setting == "lease-assignment" {
			if r.Note != nil {
				note = *r.Note
			}
			return r.Value, r.Source, note
		}
	}
	t.Fatalf("no lease-assignment row:\n%s", out)
	return
}

// TestPrintConfigReadsTheMode: --print-config says which lease assignment
// mode a worker would use and why (issue 25), read from the table with
// DescribeTable and GetItem: KCL 2.x taking on a 2.x table, the leader on
// a table with the LeaseOwnerToLeaseKeyIndex, and "unknown" with the
// reason, exit 0, where there is no table or no AWS.
func TestPrintConfigReadsTheMode(t *testing.T) {
	s := newE2EStack(t, 1)
	check := func(what, value, source, note string, wantValue string, wantNote ...string) {
		t.Helper()
		if !strings.HasPrefix(value, wantValue) || source != "table" {
			t.Errorf("%s: lease-assignment %q from %s, want %q from table", what, value, source, wantValue)
		}
		for _, w := range wantNote {
			if !strings.Contains(note, w) {
				t.Errorf("%s: note %q does not say %q", what, note, w)
			}
		}
	}
	v, src, note := printConfigMode(t, s, s.app)
	check("no table", v, src, note, "unknown: no lease table yet", s.app, "--create-table")

	emulator.CreateLeaseTable(t, s.ddb, s.app)
	v, src, note = printConfigMode(t, s, s.app)
	check("2.x table", v, src, note, "taking (KCL 2.x rules)", "KCL 2.x", "no index LeaseOwnerToLeaseKeyIndex")

	app3 := s.app + "-v3"
	emulator.CreateKCL3LeaseTable(t, s.ddb, app3)
	v, src, note = printConfigMode(t, s, app3)
	check("3.x table", v, src, note, "by the leader (KCL 3.x rules)", "LeaseOwnerToLeaseKeyIndex")

	v, src, note = printConfigMode(t, s, s.app, "AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:1", "AWS_MAX_ATTEMPTS=1")
	check("no AWS", v, src, note, "unknown: the lease table could not be read", "lease assignment mode")
}
