package cmd

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The dry run names each lease's owner, in the table and in CSV, and warns
// at once on stderr when leases to change are held, with the command that
// shows whether the owners renew; without owners it says nothing of them.
func TestResetDryRunShowsOwnersAndWarns(t *testing.T) {
	table, file := positionsTable(t, "worker-a", "")
	out, errOut, code := kcltoolEnv(t, nil, "checkpoint", "reset", "--app", table, "--from-file", file, "--region", "us-east-1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, re := range []string{
		`(?m)^LEASE +OWNER +BEFORE +AFTER +ACTION +REASON$`,
		`(?m)^shardId-000000000000 +worker-a +100 +TRIM_HORIZON +update `,
		`(?m)^shardId-000000000001 +- +100 +TRIM_HORIZON +update `,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("plan table does not match %s:\n%s", re, out)
		}
	}
	for _, want := range []string{
		"kcltool: warning: 1 lease to change is held by worker-a: if the application is running, --execute refuses (stop it first, or --force)",
		"kcltool: hint: see whether the owners renew: kcltool leases ls --app " + table + " --region us-east-1 --sample",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	out, _, _ = kcltoolEnv(t, nil, "checkpoint", "reset", "--app", table, "--from-file", file, "-o", "csv")
	// Columns are only ever added at the end (confirmedBy came after
	// leaseOwner): find the owner by its header.
	lines := strings.Split(out, "\n")
	col := slices.Index(strings.Split(lines[0], ","), "leaseOwner")
	if row := strings.Split(lines[1], ","); col < 0 || col >= len(row) || row[col] != "worker-a" {
		t.Errorf("CSV plan without the owner:\n%s", out)
	}

	free, file := positionsTable(t, "", "")
	_, errOut, _ = kcltoolEnv(t, nil, "checkpoint", "reset", "--app", free, "--from-file", file)
	if strings.Contains(errOut, "held by") {
		t.Errorf("warned about owners of unowned leases:\n%s", errOut)
	}
}
