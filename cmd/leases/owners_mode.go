package leases

import (
	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/leasecore"
)

// ownerMode is the table's lease assignment mode as every `leases owners`
// JSON row carries it (OwnerJSON): the same for all rows (the output is an
// array of workers, and a new top-level shape would break readers), null
// when the mode could not be read.
type ownerMode struct {
	// Assignment is what a `kcltool run` worker would do on the table now:
	// "taking" (KCL 2.x, and 3.x while upgrading from or rolled back to
	// 2.x) or "leader" (the fleet's leader assigns).
	Assignment       *string
	AssignmentReason *string
	ClientVersion    *string
	TableMigration   *string
	// Layout is where the coordination items live (coordination.Layout.Token).
	Layout *string
}

func ownerModeOf(st *coordination.State) ownerMode {
	if st == nil {
		return ownerMode{}
	}
	str := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	return ownerMode{Assignment: str(st.Assignment.String()), AssignmentReason: str(st.Reason),
		ClientVersion: str(st.ClientVersion), TableMigration: str(st.TableMigration), Layout: str(st.Layout.Token())}
}

// modeLine is the line under the owners table that says how leases reach
// a worker on this table, and why (coordination.State.Reason).
func modeLine(st *coordination.State) string {
	what := "workers take leases"
	if st.Assignment == leasecore.AssignByLeader {
		what = "leader assigns"
	}
	return "mode: " + what + ": " + st.Reason
}
