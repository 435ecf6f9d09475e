package cmd

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/kcltool/kcltool/reset"
)

const usageHint = "kcltool: hint: see 'kcltool --help' or 'kcltool COMMAND --help'\n"

// reset's errors name settings; the user reads them as flags, with the
// bytes they had when reset named the flags itself.
func TestResetErrorsSayFlags(t *testing.T) {
	_, err := reset.PlanImport(context.Background(), nil, reset.ImportOptions{Prune: true, PositionsOnly: true})
	if err == nil {
		t.Fatal("PlanImport with Prune and PositionsOnly: no error")
	}
	_, atErr := reset.ParseCheckpoint("AT_TIMESTAMP", 0)
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"as planError returns it", planError(err, awsContext{}),
			"kcltool: error: --prune deletes leases of the application's own table; it does not go with --to-app\n" + usageHint},
		{"wrapped", &ExitError{Code: ExitUsage, Err: fmt.Errorf("orders.json: %w", err)},
			"kcltool: error: orders.json: --prune deletes leases of the application's own table; it does not go with --to-app\n" + usageHint},
		{"flattened by cmd's usage error", usageErrorf("invalid --to-sequence: %w", atErr),
			"kcltool: error: invalid --to-sequence: AT_TIMESTAMP cannot be written as a reset: the lease does not store the time and each KCL worker would use its own configured timestamp; use --at TIME, which resolves the time to a sequence number per shard\n" + usageHint},
	} {
		var errOut bytes.Buffer
		said := sayFlags(tc.err)
		printError(&IOStreams{ErrOut: &errOut}, said, exitCode(context.Background(), said))
		if errOut.String() != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, errOut.String(), tc.want)
		}
		if !reset.IsInputError(said) || exitCode(context.Background(), said) != ExitUsage {
			t.Errorf("%s: the said error lost its kind (input error, exit 2)", tc.name)
		}
	}
}
