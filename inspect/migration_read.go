package inspect

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/clock"
	"github.com/kcltool/kcltool/leasecore"
)

// MigrationStatus is what `migration status` shows: the application's
// migration state, read without a write, and the next steps with their
// blockers.
type MigrationStatus struct {
	Facts MigrationFacts
	// Leases counts the leases; Unassigned those without an owner.
	Leases, Unassigned int
	// Owners are the lease owners; Fresh those with fresh worker metrics.
	Owners, Fresh []string
	Steps         []MigrationStep
	// Checks are the readiness checks of the cv step, each named, passed
	// or not (empty when cv is not CLIENT_VERSION_UPGRADE_FROM_2X).
	Checks []MigrationCheck
}

// MigrationCheck is one readiness check MigrationReadyMonitor makes.
type MigrationCheck struct {
	Name   string
	OK     bool
	Detail string
}

// cvChecks names MigrationReadyMonitor's checks one by one, passed ones
// too, for an operator who wants to see what is already ready.
func (s *MigrationStatus) cvChecks() []MigrationCheck {
	if s.Facts.Coord.ClientVersion != coordination.ClientVersionUpgradeFrom2X {
		return nil
	}
	return s.flipChecks(true)
}

// flipChecks are MigrationReadyMonitor's checks as the application stands;
// written says cv UPGRADE_FROM_2X is written already (else the KCL's wait
// starts once `migration start` writes it).
func (s *MigrationStatus) flipChecks(written bool) []MigrationCheck {
	c := s.Facts.Coord
	fresh := map[string]bool{}
	for _, w := range s.Fresh {
		fresh[w] = true
	}
	var without []string
	for _, w := range s.Owners {
		if !fresh[w] {
			without = append(without, w)
		}
	}
	checks := []MigrationCheck{{Name: "index LeaseOwnerToLeaseKeyIndex ACTIVE", OK: c.Index == "ACTIVE", Detail: orNone(c.Index)}}
	m := MigrationCheck{Name: fmt.Sprintf("every lease owner has worker metrics newer than %s", WorkerMetricsFreshness), OK: len(without) == 0,
		Detail: fmt.Sprintf("%d of %d owners", len(s.Owners)-len(without), len(s.Owners))}
	if len(without) > 0 {
		m.Detail += "; without: " + strings.Join(without, ", ")
	}
	checks = append(checks, m,
		MigrationCheck{Name: "no lease without an owner", OK: s.Unassigned == 0, Detail: plural(s.Unassigned, "lease") + " unassigned"})
	wait := MigrationCheck{Name: fmt.Sprintf("the KCL's wait (a check every %s, stable for %s)", CVMonitorInterval, CVStabilization), OK: true}
	switch left := max(0, CVMonitorInterval+CVStabilization-s.Facts.Now.Sub(c.ClientVersionAt)); {
	case !written:
		wait.OK = false
		wait.Detail = fmt.Sprintf("starts when cv %s is written: at least %s", coordination.ClientVersionUpgradeFrom2X, CVMonitorInterval+CVStabilization)
	case c.ClientVersionAt.IsZero():
		wait.Detail = "cv has no mts: the wait starts when the leader first finds the fleet ready"
	case left > 0:
		// Not a failed check: time alone clears it.
		wait.Detail = fmt.Sprintf("%s left since cv was written", left.Round(time.Second))
	default:
		wait.Detail = "run out since cv was written; the leader flips at most " + (CVMonitorInterval + CVStabilization).String() + " after every check first passes"
	}
	return append(checks, wait)
}

// Blocked: something holds a step the leader would take.
func (s *MigrationStatus) Blocked() bool {
	for _, st := range s.Steps {
		if len(st.Blockers) > 0 {
			return true
		}
	}
	return false
}

// ReadMigration reads what the KCL's leader reads to judge its next
// migration step (coordination.Detect, the TableMigration3.5 item's mts,
// the lease table, the worker metrics in both layouts and, during tm
// PENDING, the side table's keys), and judges it with MigrationSteps. A
// single read of the lease table cannot tell an expired lease, so every
// owned lease counts as unexpired: the stricter reading.
func ReadMigration(ctx context.Context, api coordination.ReadAPI, t coordination.Tables, clk clock.Clock) (*MigrationStatus, error) {
	coord, err := coordination.Detect(ctx, api, t)
	if err != nil {
		return nil, err
	}
	scan, err := leasecore.ScanTable(ctx, api, t.Lease, leasecore.ScanOptions{ConsistentRead: true, Uncounted: true,
		Sleep: func(ctx context.Context, d time.Duration) error { return clock.Sleep(ctx, clk, d) }})
	if err != nil {
		return nil, err
	}
	f := MigrationFacts{Coord: coord, Leases: scan.Leases, Tables: t}
	if read, present := coord.ForReading(len(scan.NonLeases)); present {
		if f.Metrics, err = coordination.ListWorkerMetrics(ctx, api, t, read); err != nil {
			return nil, err
		}
	}
	if coord.TableMigrationIn != "" {
		if f.TMAt, err = tableMigrationAt(ctx, api, t, coord.TableMigrationIn); err != nil {
			return nil, err
		}
	}
	if TMIs(coord.TableMigration, coordination.TableMigrationPending) && coord.CoordinatorStateTable == coordination.PresencePresent {
		if f.LegacyCoordKeys, err = legacyCoordKeys(ctx, api, t.CoordinatorState); err != nil {
			return nil, err
		}
	}
	f.Now = clk.Now()
	st := &MigrationStatus{Facts: f, Leases: len(scan.Leases)}
	owners := map[string]bool{}
	for _, l := range scan.Leases {
		if l.LeaseOwner == "" {
			st.Unassigned++
			continue
		}
		owners[l.LeaseOwner] = true
	}
	for w := range owners {
		st.Owners = append(st.Owners, w)
	}
	slices.Sort(st.Owners)
	st.Facts.UnexpiredOwners = st.Owners
	fresh := freshWorkers(st.Facts, "")
	for w := range fresh {
		st.Fresh = append(st.Fresh, w)
	}
	slices.Sort(st.Fresh)
	st.Steps = MigrationSteps(st.Facts)
	st.Checks = st.cvChecks()
	return st, nil
}

// tableMigrationAt reads TableMigration3.5's mts where Detect found it.
func tableMigrationAt(ctx context.Context, api leasecore.GetItemAPI, t coordination.Tables, in string) (time.Time, error) {
	keyAttr := "leaseKey"
	if in == t.CoordinatorState {
		keyAttr = "key"
	}
	out, err := api.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(in), ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{keyAttr: &ddbtypes.AttributeValueMemberS{Value: "TableMigration3.5"}}})
	if err != nil {
		return time.Time{}, fmt.Errorf("read TableMigration3.5 in %s: %w", in, err)
	}
	n, ok := out.Item["mts"].(*ddbtypes.AttributeValueMemberN)
	if !ok {
		return time.Time{}, nil
	}
	ms, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return time.Time{}, nil
	}
	return time.UnixMilli(ms).UTC(), nil
}

// legacyCoordKeys lists <app>-CoordinatorState's keys other than the ones
// TableMigrationStateMachineImpl.isLegacyCoordinatorStateEmpty ignores
// (the lock and TableMigration3.5).
func legacyCoordKeys(ctx context.Context, api leasecore.ScanAPI, table string) ([]string, error) {
	var keys []string
	in := &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)}
	for {
		out, err := api.Scan(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", table, err)
		}
		for _, it := range out.Items {
			if k, ok := it["key"].(*ddbtypes.AttributeValueMemberS); ok && k.Value != "Leader" && k.Value != "TableMigration3.5" {
				keys = append(keys, k.Value)
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return keys, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}
