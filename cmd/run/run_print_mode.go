package run

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/runner"
)

// printModeTimeout bounds --print-config's read of the table: the
// settings are printed whatever AWS does, and a machine with no route to
// AWS must not wait for the SDK's retries.
const printModeTimeout = 5 * time.Second

// sourceTable: the lease-assignment row was read from the lease table.
const sourceTable = "table"

// assignmentRow says how a worker with cfg would get its leases, read from
// the table as the worker reads it at start (issue 25: --print-config says
// which mode and why). The reads are DescribeTable and GetItem only. When
// they fail, the row says so and why, and the rest still prints: the
// command stays usable offline, where it shows the settings alone.
func assignmentRow(ctx context.Context, f *cmdutil.Factory, cfg runner.Config) configRow {
	row := configRow{Setting: "lease-assignment", Source: sourceTable}
	ctx, cancel := context.WithTimeout(ctx, printModeTimeout)
	defer cancel()
	st, err := readMode(ctx, f, cfg)
	var nf *leasecore.TableNotFoundError
	switch {
	case errors.As(err, &nf):
		row.Value = "unknown: no lease table yet"
		row.Note = fmt.Sprintf("table %s does not exist; the first worker creates it with --create-table, and the mode follows from what it creates", nf.Table)
		if cfg.CreateTable {
			row.Note = fmt.Sprintf("table %s does not exist yet; --create-table creates it at start", nf.Table)
		}
	case err != nil:
		row.Value = "unknown: the lease table could not be read"
		row.Note = err.Error() + "; the worker reads the mode at start (its log line \"lease assignment mode\" says which and why)"
	default:
		row.Value = modeValue(st)
		row.Note = st.Reason
	}
	return row
}

func readMode(ctx context.Context, f *cmdutil.Factory, cfg runner.Config) (coordination.State, error) {
	ddb, err := f.DynamoDB(ctx)
	if err != nil {
		return coordination.State{}, err
	}
	return runner.DetectMode(ctx, ddb, cfg)
}

// modeValue is the row's value: the assignment, whether the worker writes
// metrics, and where the coordination items live.
func modeValue(st coordination.State) string {
	v := "taking (KCL 2.x rules)"
	if st.Assignment == leasecore.AssignByLeader {
		v = "by the leader (KCL 3.x rules)"
	}
	if st.ReportMetrics {
		v += ", worker metrics"
	}
	if st.Layout != coordination.LayoutNone {
		v += ", layout " + st.Layout.Token()
	}
	return v
}
