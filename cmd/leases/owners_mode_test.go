package leases

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/inspect"
	"github.com/kcltool/kcltool/internal/testenv/clocktest"
	"github.com/kcltool/kcltool/leasecore"
)

// TestOwnersModeOutput: the table's lease assignment mode is one dim line
// under the owners table and five keys in every JSON row, null when the
// mode could not be read (every documented key is always present); the
// CSV, one row per worker, stays as it was.
func TestOwnersModeOutput(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	render := func(o *inspect.Owners, format string) string {
		var out bytes.Buffer
		f := &cmdutil.Factory{IO: &cmdutil.IOStreams{Out: &out, ErrOut: &bytes.Buffer{}}, Clock: clocktest.New(now)}
		if err := renderOwners(f, format, o, false); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	owners := func(st *coordination.State) *inspect.Owners {
		return (&inspect.Owners{Workers: []inspect.Owner{{Worker: "w1", Shards: []string{"s0"}}}, Leases: 1, FairShare: 1}).WithMode(st)
	}
	leader := &coordination.State{Assignment: leasecore.AssignByLeader, ClientVersion: coordination.ClientVersion3X,
		TableMigration: "TABLE_MIGRATION_STATUS_DEPLOYED", Layout: coordination.LayoutSideTables,
		Reason: "KCL 3.x (Migration3.0 cv=CLIENT_VERSION_3X in orders-CoordinatorState; index LeaseOwnerToLeaseKeyIndex ACTIVE; tm DEPLOYED in orders-CoordinatorState)"}
	taking := &coordination.State{Assignment: leasecore.AssignByTaking, Reason: "KCL 2.x (no Migration3.0 item; no index LeaseOwnerToLeaseKeyIndex)"}

	for _, c := range []struct {
		st   *coordination.State
		line string
		json map[string]any
	}{
		{leader, "\nmode: leader assigns: " + leader.Reason + "\n", map[string]any{"assignment": "leader", "assignmentReason": leader.Reason,
			"clientVersion": coordination.ClientVersion3X, "tableMigration": "TABLE_MIGRATION_STATUS_DEPLOYED", "layout": "side-tables"}},
		{taking, "\nmode: workers take leases: " + taking.Reason + "\n", map[string]any{"assignment": "taking", "assignmentReason": taking.Reason,
			"clientVersion": nil, "tableMigration": nil, "layout": "none"}},
		{nil, "", map[string]any{"assignment": nil, "assignmentReason": nil, "clientVersion": nil, "tableMigration": nil, "layout": nil}},
	} {
		table := render(owners(c.st), "table")
		if c.line != "" && !strings.Contains(table, c.line) || c.line == "" && strings.Contains(table, "mode:") {
			t.Errorf("table for %+v, want line %q:\n%s", c.st, c.line, table)
		}
		var js []map[string]any
		if err := json.Unmarshal([]byte(render(owners(c.st), "json")), &js); err != nil || len(js) != 1 {
			t.Fatalf("json: %v %v", err, js)
		}
		for k, want := range c.json {
			if got, ok := js[0][k]; !ok || got != want {
				t.Errorf("json %s = %v (present %v), want %v", k, got, ok, want)
			}
		}
		if csv := render(owners(c.st), "csv"); !strings.HasPrefix(csv, "worker,leases,fairShare,shards,throughputKBps\n") {
			t.Errorf("csv changed:\n%s", csv)
		}
	}
}
