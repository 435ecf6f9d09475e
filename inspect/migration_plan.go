package inspect

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/clock"
	"github.com/kcltool/kcltool/leasecore"
)

// The operator's migration commands, planned from one read. What each one
// writes, and why there, is the KCL 3.5.1 source's:
//   - start is the deployment of KCL 3.x with clientVersionConfig
//     COMPATIBLE_WITH_2X on a 2.x application: the first worker writes
//     Migration3.0 cv CLIENT_VERSION_UPGRADE_FROM_2X as it enters the state
//     (AbstractMigrationClientVersionState.ensureDdbStateMatchesClientVersion,
//     a create-if-not-exists), then adds the index without waiting
//     (DynamicMigrationComponentsInitializer.initializeClientVersionForUpgradeFrom2x
//     → createGsi(false)). On a rolled-back application (cv 2X) it is
//     KclMigrationTool.py rollforward: cv 2X → UPGRADE_FROM_2X, conditioned
//     on cv 2X. kcltool writes cv first, then the index, in the KCL's
//     order: an index without cv would make readers (coordination.Detect,
//     and a KCL 3.x worker with the default config) take the table for a
//     3.x application.
//   - rollback is KclMigrationTool.py rollback: cv → CLIENT_VERSION_2X
//     conditioned on cv being UPGRADE_FROM_2X or 3X_WITH_ROLLBACK, a wait
//     of 120 s (GSI_DELETION_WAIT_TIME_SECONDS) so that every worker's
//     ClientVersionChangeMonitor (a minute, plus up to 50% jitter) has seen
//     it, then the index deleted. The KCL 3.0–3.4 tool also deleted the
//     WorkerMetricStats table; 3.5.1's keeps the metrics (in the lease
//     table). kcltool deletes that side table only for a 3.0–3.4 fleet
//     (Migration3.0 in the side table, no TableMigration3.5 item).
//   - finalize is the deployment with CLIENT_VERSION_CONFIG_3X: a worker
//     starting on cv 3X_WITH_ROLLBACK enters CLIENT_VERSION_3X and updates
//     the item conditioned on the cv read
//     (MigrationClientVersionStateInitializer.getClientVersionForInitialization).
//
// Migration3.0 is written where it was read (Detect reads it as
// CoordinatorStateDAO.getCoordinatorState does: the side table first);
// a new one where a worker would create it (CoordinatorStateDAO's write
// delegate: the side table while tm is INIT or DEPLOYED, else the lease
// table). KclMigrationTool.py 3.5.1 reads and writes the lease table only.

// MigrationCommands are the operator's steps.
const (
	MigrationStart    = "start"
	MigrationRollback = "rollback"
	MigrationFinalize = "finalize"
)

// RollbackIndexWait is KclMigrationTool.py's GSI_DELETION_WAIT_TIME_SECONDS.
const RollbackIndexWait = 120 * time.Second

// MigrationPlan is one command's plan.
type MigrationPlan struct {
	Command string
	Status  *MigrationStatus
	Writes  []coordination.MigrationWrite
	// Checks are MigrationReadyMonitor's readiness checks for the leader's
	// flip to CLIENT_VERSION_3X_WITH_ROLLBACK, as they stand (start and
	// finalize; empty when the flip is behind or not on the way).
	Checks []MigrationCheck
	// Blockers hold this command's step (exit 3).
	Blockers []string
	// Done says why there is nothing to do ("" when there is).
	Done string
	// Next is what follows the step.
	Next string
	// After is the application as read again after the writes (nil
	// before, or when none were made); Checks are then its checks.
	After *MigrationStatus
}

// Reread reads the application again after the writes: After, and the
// readiness checks as they now stand.
func (p *MigrationPlan) Reread(ctx context.Context, api coordination.ReadAPI, clk clock.Clock) error {
	st, err := ReadMigration(ctx, api, p.Status.Facts.Tables, clk)
	if err != nil {
		return err
	}
	p.After, p.Checks = st, nil
	if p.Command != MigrationRollback && st.Facts.Coord.ClientVersion == coordination.ClientVersionUpgradeFrom2X {
		p.Checks = st.planChecks(true)
	}
	return nil
}

// MigrationPlanOptions tune a plan.
type MigrationPlanOptions struct {
	// IndexWait is rollback's wait between cv 2X and the index deletion
	// (RollbackIndexWait is the KCL tool's; zero: none).
	IndexWait time.Duration
}

// PlanMigration reads the application (ReadMigration and the lease table's
// description) and plans the command.
func PlanMigration(ctx context.Context, api coordination.ReadAPI, t coordination.Tables, clk clock.Clock, command string, o MigrationPlanOptions) (*MigrationPlan, error) {
	st, err := ReadMigration(ctx, api, t, clk)
	if err != nil {
		return nil, err
	}
	desc, err := leasecore.DescribeTable(ctx, api, t.Lease)
	if err != nil {
		return nil, err
	}
	if desc == nil {
		return nil, &leasecore.TableNotFoundError{Table: t.Lease, Region: leasecore.RegionOf(api)}
	}
	return PlanMigrationFrom(st, desc, command, o)
}

// PlanMigrationFrom plans the command from what was read.
func PlanMigrationFrom(st *MigrationStatus, desc *types.TableDescription, command string, o MigrationPlanOptions) (*MigrationPlan, error) {
	p := &MigrationPlan{Command: command, Status: st}
	if desc.TableStatus != "" && desc.TableStatus != types.TableStatusActive {
		p.Blockers = append(p.Blockers, fmt.Sprintf("table %s is %s, not ACTIVE: an index cannot be added or deleted until it is", st.Facts.Tables.Lease, desc.TableStatus))
	}
	switch command {
	case MigrationStart:
		planStart(p, desc)
	case MigrationRollback:
		planRollback(p, o)
	case MigrationFinalize:
		planFinalize(p)
	default:
		return nil, fmt.Errorf("unknown migration command %q", command)
	}
	if len(p.Blockers) > 0 {
		p.Done = ""
	}
	return p, nil
}

// cvWrite is the write of cv to, where the item is (or would be created).
func (p *MigrationPlan) cvWrite(to string) {
	c, t := p.Status.Facts.Coord, p.Status.Facts.Tables
	w := coordination.MigrationWrite{To: to, By: coordination.MigrationBy(p.Command)}
	if c.ClientVersion == "" {
		table, ok := c.MigrationWriteTable(t)
		if !ok {
			p.Blockers = append(p.Blockers, fmt.Sprintf("%s may not be described: kcltool cannot tell whether a KCL worker would write Migration3.0 there or in %s", t.CoordinatorState, t.Lease))
			return
		}
		w.Action, w.Table = coordination.ActionCreateCV, table
		w.Detail = fmt.Sprintf("create Migration3.0 in %s with cv %s (if none exists)", table, to)
	} else {
		w.Action, w.Table, w.From, w.FromAt, w.FromBy, w.History = coordination.ActionUpdateCV, c.ClientVersionIn, c.ClientVersion, c.ClientVersionAt, c.ClientVersionBy, c.ClientVersionHistory
		w.Detail = fmt.Sprintf("update Migration3.0 in %s: cv %s → %s (if cv and mts are still the ones read)", w.Table, c.ClientVersion, to)
	}
	w.KeyAttr = leasecore.AttrLeaseKey
	if w.Table == t.CoordinatorState {
		w.KeyAttr = "key"
	}
	p.Writes = append(p.Writes, w)
}

func planStart(p *MigrationPlan, desc *types.TableDescription) {
	c, t := p.Status.Facts.Coord, p.Status.Facts.Tables
	switch {
	case c.ClientVersion == coordination.ClientVersion3X || (c.ClientVersion == "" && c.Layout != coordination.LayoutNone):
		p.Done = "the application runs KCL 3.x already (cv " + orNone(c.ClientVersion) + "): nothing to migrate"
		return
	case c.ClientVersion == coordination.ClientVersion3XWithRollback:
		p.Done = "the leader already flipped cv to " + c.ClientVersion
		p.Next = "finalize: `kcltool migration finalize` (what deploying with CLIENT_VERSION_CONFIG_3X does)"
		return
	case c.ClientVersion == "" || c.ClientVersion == coordination.ClientVersion2X:
		p.cvWrite(coordination.ClientVersionUpgradeFrom2X)
	}
	switch c.Index {
	case "":
		w := coordination.MigrationWrite{Action: coordination.ActionAddIndex, Table: t.Lease}
		mode := "on demand: no throughput"
		if !onDemand(desc) && desc.ProvisionedThroughput != nil {
			w.ProvisionedThroughput = &types.ProvisionedThroughput{ReadCapacityUnits: desc.ProvisionedThroughput.ReadCapacityUnits, WriteCapacityUnits: desc.ProvisionedThroughput.WriteCapacityUnits}
			mode = fmt.Sprintf("provisioned: the table's %d RCU / %d WCU", *w.ProvisionedThroughput.ReadCapacityUnits, *w.ProvisionedThroughput.WriteCapacityUnits)
		}
		w.Detail = fmt.Sprintf("add index %s to %s by UpdateTable (%s), and wait until it is ACTIVE", leasecore.KCL3IndexName, t.Lease, mode)
		p.Writes = append(p.Writes, w)
	case "ACTIVE":
	case "DELETING":
		p.Blockers = append(p.Blockers, fmt.Sprintf("index %s is DELETING (a rollback's deletion): start again once it is gone", leasecore.KCL3IndexName))
	default:
		p.Writes = append(p.Writes, coordination.MigrationWrite{Action: coordination.ActionWaitIndex, Table: t.Lease,
			Detail: fmt.Sprintf("wait until index %s (now %s) is ACTIVE", leasecore.KCL3IndexName, c.Index)})
	}
	p.Checks = p.Status.planChecks(c.ClientVersion == coordination.ClientVersionUpgradeFrom2X)
	if len(p.Writes) == 0 && len(p.Blockers) == 0 {
		p.Done = "cv " + c.ClientVersion + " and the index ACTIVE: the migration is started"
	}
	p.Next = fmt.Sprintf("the leader flips cv to %s once the index is ACTIVE and every lease owner reports worker metrics, steadily for %s; then `kcltool migration finalize`",
		coordination.ClientVersion3XWithRollback, CVStabilization)
}

func planRollback(p *MigrationPlan, o MigrationPlanOptions) {
	c, t := p.Status.Facts.Coord, p.Status.Facts.Tables
	now := p.Status.Facts.Now
	wait := o.IndexWait
	switch c.ClientVersion {
	case coordination.ClientVersion3X:
		p.Blockers = append(p.Blockers, "cv "+c.ClientVersion+" is final: the KCL cannot roll it back (KclMigrationTool.py refuses too)")
		return
	case "":
		if c.Layout == coordination.LayoutNone {
			p.Done = "a KCL 2.x table: nothing to roll back"
		} else {
			p.Blockers = append(p.Blockers, "no Migration3.0 item on a KCL 3.x application: its workers start CLIENT_VERSION_3X, which cannot be rolled back")
		}
		return
	case coordination.ClientVersionUpgradeFrom2X, coordination.ClientVersion3XWithRollback:
		p.cvWrite(coordination.ClientVersion2X)
	case coordination.ClientVersion2X:
		if !c.ClientVersionAt.IsZero() {
			wait = max(0, wait-now.Sub(c.ClientVersionAt))
		}
	}
	if c.Index != "" && c.Index != "DELETING" {
		if wait > 0 {
			p.Writes = append(p.Writes, coordination.MigrationWrite{Action: coordination.ActionWait, Wait: wait,
				Detail: fmt.Sprintf("wait %s after cv %s was written, so that every worker has stopped using the index (KclMigrationTool.py waits %s)", wait.Round(time.Second), coordination.ClientVersion2X, RollbackIndexWait)})
		}
		p.Writes = append(p.Writes, coordination.MigrationWrite{Action: coordination.ActionDeleteIndex, Table: t.Lease,
			Detail: fmt.Sprintf("delete index %s of %s by UpdateTable", leasecore.KCL3IndexName, t.Lease)})
	}
	// The KCL 3.0–3.4 tool's last step, for the fleets it served.
	if c.ClientVersionIn == t.CoordinatorState && c.TableMigration == "" && c.WorkerMetricsTable == coordination.PresencePresent {
		p.Writes = append(p.Writes, coordination.MigrationWrite{Action: coordination.ActionDeleteTable, Table: t.WorkerMetrics,
			Detail: fmt.Sprintf("delete table %s (the KCL 3.0–3.4 migration tool's rollback did)", t.WorkerMetrics)})
	}
	if len(p.Writes) == 0 {
		p.Done = "cv " + coordination.ClientVersion2X + " and no index: rolled back already"
	}
	p.Next = "deploy the previous KCL (2.x) if the fleet still misbehaves; `kcltool migration start` rolls forward"
}

func planFinalize(p *MigrationPlan) {
	c := p.Status.Facts.Coord
	switch {
	case c.ClientVersion == coordination.ClientVersion3X || (c.ClientVersion == "" && c.Layout != coordination.LayoutNone):
		p.Done = "cv " + orNone(c.ClientVersion) + ": the application runs KCL 3.x for good"
	case c.ClientVersion == coordination.ClientVersion3XWithRollback:
		if c.Index != "ACTIVE" {
			p.Blockers = append(p.Blockers, fmt.Sprintf("index %s is %s, not ACTIVE: KCL 3.x workers query it (run `kcltool migration start` to add it)", leasecore.KCL3IndexName, orNone(c.Index)))
		}
		p.cvWrite(coordination.ClientVersion3X)
		p.Next = "deploy the workers with clientVersionConfig CLIENT_VERSION_CONFIG_3X (the default), so that a restart never meets an old config"
	case c.ClientVersion == coordination.ClientVersionUpgradeFrom2X:
		p.Checks = p.Status.planChecks(true)
		p.Blockers = append(p.Blockers, fmt.Sprintf("cv is %s: finalize needs %s, which the leader writes", c.ClientVersion, coordination.ClientVersion3XWithRollback))
		for i, ch := range p.Checks {
			// The last check is the KCL's wait: time left holds the flip too.
			if strings.HasPrefix(ch.Name, "owner ") {
				continue // the aggregate check names them
			}
			if !ch.OK || (i == len(p.Checks)-1 && strings.HasSuffix(ch.Detail, "left since cv was written")) {
				p.Blockers = append(p.Blockers, "check "+ch.Name+": "+ch.Detail)
			}
		}
		p.Next = "wait for the leader's flip (`kcltool migration status`), then finalize"
	default:
		p.Blockers = append(p.Blockers, fmt.Sprintf("cv is %s: finalize needs %s; run `kcltool migration start` first", orNone(c.ClientVersion), coordination.ClientVersion3XWithRollback))
	}
}

// maxOwnerChecks bounds the per-owner rows of a plan; the aggregate check
// still names every owner without fresh metrics.
const maxOwnerChecks = 20

// planChecks are flipChecks with one row per lease owner after the
// aggregate (the first maxOwnerChecks owners without fresh metrics, then
// those with), so that a plan names each owner's check.
func (s *MigrationStatus) planChecks(written bool) []MigrationCheck {
	checks := s.flipChecks(written)
	fresh := map[string]bool{}
	for _, w := range s.Fresh {
		fresh[w] = true
	}
	var stale, ok []string
	for _, w := range s.Owners {
		if fresh[w] {
			ok = append(ok, w)
		} else {
			stale = append(stale, w)
		}
	}
	var rows []MigrationCheck
	for _, w := range append(stale, ok...) {
		if len(rows) == maxOwnerChecks {
			break
		}
		r := MigrationCheck{Name: fmt.Sprintf("owner %s: worker metrics newer than %s", w, WorkerMetricsFreshness), OK: fresh[w], Detail: "fresh"}
		if !fresh[w] {
			r.Detail = "none, or older"
		}
		rows = append(rows, r)
	}
	// After the aggregate metrics check (the second).
	return append(checks[:2], append(rows, checks[2:]...)...)
}

func onDemand(d *types.TableDescription) bool {
	return d.BillingModeSummary != nil && d.BillingModeSummary.BillingMode == types.BillingModePayPerRequest
}

// Blocked: something holds the command's step.
func (p *MigrationPlan) Blocked() bool { return len(p.Blockers) > 0 }
