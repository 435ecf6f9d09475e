package coordination

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/leasecore"
)

func TestMigrationMetricsActive(t *testing.T) {
	now := time.Unix(1_000_000, 900_000_000) // .9 s: Java judges whole seconds
	expiry := MigrationMetricsExpiry(30 * time.Second)
	if expiry != time.Minute {
		t.Fatalf("expiry = %s, want 2 × 30 s", expiry)
	}
	for _, c := range []struct {
		lut  int64
		want bool
	}{
		{1_000_000 - 59, true},
		{1_000_000 - 60, false}, // lut + 60 > now fails at equality
		{0, false},
	} {
		m := WorkerMetrics{WorkerID: "w", LastUpdate: time.Unix(c.lut, 0)}
		if c.lut == 0 {
			m.LastUpdate = time.Time{}
		}
		if got := MigrationMetricsActive(m, now, expiry); got != c.want {
			t.Errorf("lut now-%d: active = %v, want %v", 1_000_000-c.lut, got, c.want)
		}
	}
}

func TestCheckMigrationReady(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	fresh := func(w string) WorkerMetrics {
		return WorkerMetrics{WorkerID: w, LastUpdate: now.Add(-10 * time.Second)}
	}
	stale := func(w string) WorkerMetrics { return WorkerMetrics{WorkerID: w, LastUpdate: now.Add(-2 * time.Minute)} }
	leases := []leasecore.Lease{{LeaseKey: "s1", LeaseOwner: "w1"}, {LeaseKey: "s2", LeaseOwner: "w2"}, {LeaseKey: "s3", LeaseOwner: "w1"}}
	for _, c := range []struct {
		name    string
		index   string
		leases  []leasecore.Lease
		metrics []WorkerMetrics
		ready   bool
		without []string
	}{
		{"ready", "ACTIVE", leases, []WorkerMetrics{fresh("w1"), fresh("w2"), stale("w3")}, true, nil},
		{"index creating", "CREATING", leases, []WorkerMetrics{fresh("w1"), fresh("w2")}, false, nil},
		{"no index", "", leases, []WorkerMetrics{fresh("w1"), fresh("w2")}, false, nil},
		{"stale owner", "ACTIVE", leases, []WorkerMetrics{fresh("w1"), stale("w2")}, false, []string{"w2"}},
		{"owner without item", "ACTIVE", leases, []WorkerMetrics{fresh("w1")}, false, []string{"w2"}},
		{"unowned lease", "ACTIVE", append(slices.Clone(leases), leasecore.Lease{LeaseKey: "s4"}), []WorkerMetrics{fresh("w1"), fresh("w2")}, false, nil},
		{"no leases", "ACTIVE", nil, nil, true, nil},
	} {
		r := CheckMigrationReady(c.index, c.leases, c.metrics, now, time.Minute)
		if r.Ready() != c.ready || !slices.Equal(r.WithoutMetrics, c.without) {
			t.Errorf("%s: ready %v without %q, want %v %q (%s)", c.name, r.Ready(), r.WithoutMetrics, c.ready, c.without, r.Failed())
		}
		if !c.ready && r.Failed() == "" {
			t.Errorf("%s: not ready, but no check named", c.name)
		}
	}
}

// The window: a flip only after the checks have passed for 10 minutes
// without a break, judged at the minute checks; a failed check, or a
// worker that stops leading, starts it again.
func TestMigrationStabilizer(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	at := func(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }
	s := &MigrationStabilizer{Window: MigrationFlipStabilization}
	for m := 1; m <= 10; m++ {
		if due, _ := s.Observe(true, at(m)); due {
			t.Fatalf("flip due at minute %d, %d minutes after the first passing check", m, m-1)
		}
	}
	// Minute 11 would flip; a failed check there starts again.
	if due, _ := s.Observe(false, at(11)); due {
		t.Fatal("flip due on a failed check")
	}
	for m := 12; m <= 21; m++ {
		if due, _ := s.Observe(true, at(m)); due {
			t.Fatalf("flip due at minute %d after a failed check at 11", m)
		}
	}
	if due, held := s.Observe(true, at(22)); !due || held != 10*time.Minute {
		t.Fatalf("minute 22 (10 min after the checks passed again): due %v held %s, want a flip", due, held)
	}
	s.Reset()
	if due, _ := s.Observe(true, at(23)); due {
		t.Fatal("flip due right after a reset (the worker stopped leading)")
	}
	// Whole seconds: 9m59.9s is not 10 minutes.
	s = &MigrationStabilizer{Window: MigrationFlipStabilization}
	s.Observe(true, t0)
	if due, _ := s.Observe(true, t0.Add(10*time.Minute-100*time.Millisecond)); due {
		t.Fatal("flip due before the whole 10 minutes")
	}
}

// The flip writes what MigrationState.update writes, where Migration3.0
// was read, and never over a cv changed since the read.
func TestFlipTo3XWithRollback(t *testing.T) {
	for _, side := range []bool{false, true} {
		r := newRig(t, true, side)
		table := r.tb.Lease
		if side {
			table = r.tb.CoordinatorState
		}
		r.migration(table, ClientVersionUpgradeFrom2X)
		st := r.detect()
		if st.ClientVersion != ClientVersionUpgradeFrom2X || st.ClientVersionIn != table {
			t.Fatalf("read cv %q in %q", st.ClientVersion, st.ClientVersionIn)
		}
		now := time.UnixMilli(1764900600000).UTC()
		if err := FlipTo3XWithRollback(context.Background(), r.c, r.tb, st, "worker-b", now); err != nil {
			t.Fatalf("side %v: flip: %v", side, err)
		}
		got := r.detect()
		if got.ClientVersion != ClientVersion3XWithRollback || got.ClientVersionBy != "worker-b" || !got.ClientVersionAt.Equal(now) {
			t.Errorf("side %v: after the flip cv %s mb %s mts %s", side, got.ClientVersion, got.ClientVersionBy, got.ClientVersionAt)
		}
		if len(got.ClientVersionHistory) == 0 || got.ClientVersionHistory[0].ClientVersion != ClientVersionUpgradeFrom2X || got.ClientVersionHistory[0].By != "worker-a" {
			t.Errorf("side %v: history %+v, want the replaced UPGRADE_FROM_2X by worker-a first", side, got.ClientVersionHistory)
		}
	}

	// A rollback between the monitor's read and its write.
	r := newRig(t, true, false)
	r.migration(r.tb.Lease, ClientVersionUpgradeFrom2X)
	st := r.detect()
	r.migration(r.tb.Lease, ClientVersion2X)
	err := FlipTo3XWithRollback(context.Background(), r.c, r.tb, st, "worker-b", time.Now())
	if !errors.Is(err, ErrMigrationStateChanged) {
		t.Fatalf("flip over a rollback: err %v, want ErrMigrationStateChanged", err)
	}
	if got := r.detect(); got.ClientVersion != ClientVersion2X {
		t.Errorf("cv %s after the refused flip, want the rollback's %s kept", got.ClientVersion, ClientVersion2X)
	}
	// Another worker's flip (same cv, a new mts) is not written over either.
	r = newRig(t, true, false)
	r.migration(r.tb.Lease, ClientVersionUpgradeFrom2X)
	st = r.detect()
	_, err = r.c.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: aws.String(r.tb.Lease),
		Key:                       item{"leaseKey": sv("Migration3.0")},
		UpdateExpression:          aws.String("SET mts = :m, mb = :b"),
		ExpressionAttributeValues: item{":m": nv(1764900099000), ":b": &types.AttributeValueMemberS{Value: "KclMigrationTool-rollforward"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := FlipTo3XWithRollback(context.Background(), r.c, r.tb, st, "worker-b", time.Now()); !errors.Is(err, ErrMigrationStateChanged) {
		t.Fatalf("flip over a newer write: err %v, want ErrMigrationStateChanged", err)
	}
}
