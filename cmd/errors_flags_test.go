package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/kcltool/kcltool/cmd/checkpoint"
	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reset"
	"github.com/kcltool/kcltool/runner"
)

const usageHint = "kcltool: hint: see 'kcltool --help' or 'kcltool COMMAND --help'\n"

// Domain errors name settings; the user reads them as flags, with the
// bytes they had when the domain packages named the flags themselves.
func TestDomainErrorsSayFlags(t *testing.T) {
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
		{"as planError returns it", checkpoint.PlanError(err, cmdutil.AWSContext{}),
			"kcltool: error: --prune deletes leases of the application's own table; it does not go with --to-app\n" + usageHint},
		{"wrapped", &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("orders.json: %w", err)},
			"kcltool: error: orders.json: --prune deletes leases of the application's own table; it does not go with --to-app\n" + usageHint},
		{"flattened by cmd's usage error", cmdutil.UsageErrorf("invalid --to-sequence: %w", atErr),
			"kcltool: error: invalid --to-sequence: AT_TIMESTAMP cannot be written as a reset: the lease does not store the time and each KCL worker would use its own configured timestamp; use --at TIME, which resolves the time to a sequence number per shard\n" + usageHint},
		{"a missing table, wrapped", fmt.Errorf("run: %w", &leasecore.TableNotFoundError{Table: "orders", Region: "eu-west-1"}),
			"kcltool: error: run: lease table \"orders\" not found in eu-west-1 (is the application name right? pass --create-table to create it the way the KCL does)\n"},
		{"a deregistered consumer", &runner.ConsumerGoneError{ARN: "arn:c", Err: errors.New("ResourceNotFoundException")},
			"kcltool: error: enhanced fan-out consumer arn:c does not exist (deregistered, or a wrong ARN): ResourceNotFoundException; " +
				"register it again (aws kinesis register-stream-consumer) and pass its new ARN with --consumer-arn, or use --consumer-name to have kcltool register it\n"},
	} {
		var errOut bytes.Buffer
		said := cmdutil.SayFlags(tc.err)
		printError(&cmdutil.IOStreams{ErrOut: &errOut}, said, cmdutil.ExitCode(context.Background(), said))
		if errOut.String() != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, errOut.String(), tc.want)
		}
		if _, usage := tc.err.(*cmdutil.ExitError); usage && (!reset.IsInputError(said) || cmdutil.ExitCode(context.Background(), said) != cmdutil.ExitUsage) {
			t.Errorf("%s: the said error lost its kind (input error, exit 2)", tc.name)
		}
	}
}
