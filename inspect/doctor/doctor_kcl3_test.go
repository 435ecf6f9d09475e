package doctor

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/leasecore"
)

func s(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
func n(v int64) ddbtypes.AttributeValue {
	return &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// leaderLock writes KCL 3.5's leader lock item (docs/kcl-compat.md, KCL 3.x
// items; testdata/kcl/f6-kcl35-non-lease.jsonl).
func (r *rig) leaderLock(owner, version string) {
	r.putItem(map[string]ddbtypes.AttributeValue{"leaseKey": s("Leader"), "ownerName": s(owner),
		"leaseDuration": s("120000"), "recordVersionNumber": s(version), "entityType": s("LEADER")})
}

// workerMetrics writes a 3.5 worker-metrics item with lut at the time given.
func (r *rig) workerMetrics(worker string, lut time.Time) {
	r.putItem(map[string]ddbtypes.AttributeValue{"leaseKey": s(worker), "entityType": s("WORKER_METRIC_STATS"),
		"lut": n(lut.Unix()), "sts": &ddbtypes.AttributeValueMemberM{Value: map[string]ddbtypes.AttributeValue{
			"C": &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{n(41)}}}}})
}

// TestDoctorKCL3Stuck: a 3.5 single-table fleet whose leader stopped
// heartbeating, a worker whose metrics went stale while it holds a lease,
// and a graceful handoff older than the handoff timeout plus failover.
func TestDoctorKCL3Stuck(t *testing.T) {
	r := newRig(t, 10*time.Second, 70*time.Second)
	start := r.clock.Now()
	r.putItem(map[string]ddbtypes.AttributeValue{"leaseKey": s("Migration3.0"), "cv": s("CLIENT_VERSION_3X"),
		"mb": s("w1"), "mts": n(start.UnixMilli()), "entityType": s("CLIENT_VERSION_MIGRATION")})
	r.leaderLock("w1", "3f1c2a9e")
	r.workerMetrics("w2", start.Add(-5*time.Minute))
	r.create(leasecore.Lease{LeaseKey: shard(0), LeaseOwner: "w1", LeaseCounter: 3, EntityType: "LEASE"})
	r.create(leasecore.Lease{LeaseKey: shard(1), LeaseOwner: "w2", LeaseCounter: 3, EntityType: "LEASE"})
	// mid-handoff: the leader made w1 the next owner, w2 still processes
	r.create(leasecore.Lease{LeaseKey: shard(2), LeaseOwner: "w1", CheckpointOwner: "w2", LeaseCounter: 3, EntityType: "LEASE"})
	r.create(leasecore.Lease{LeaseKey: shard(3), LeaseOwner: "w2", LeaseCounter: 3, EntityType: "LEASE"})
	rep := r.run(func(i int) {
		r.workerMetrics("w1", r.clock.Now())
		if i > 0 {
			r.renewAll()
		}
	})
	if !rep.KCL3 {
		t.Error("report does not say KCL 3.x")
	}
	want(t, rep, FindLeaderStale, SeverityWarn, "leader lock held by w1 has not been renewed for 1m10s")
	f := want(t, rep, FindStaleMetrics, SeverityWarn, "w2")
	if !strings.Contains(strings.Join(f.Evidence.Lines, "\n"), "holds 3 leases") {
		t.Errorf("stale metrics evidence %v", f.Evidence.Lines)
	}
	h := want(t, rep, FindHandoffStuck, SeverityWarn, "1 lease in KCL 3.x graceful handoff for longer than the handoff timeout plus failover (40s)")
	if !strings.Contains(h.Evidence.Lines[0], shard(2)+": w2 → w1 for at least 1m10s") {
		t.Errorf("handoff evidence %v", h.Evidence.Lines)
	}
	absent(t, rep, FindDeadWorker, FindLeaderMissing)
	if f := find(t, rep, FindImbalance); f.Severity != SeverityInfo {
		t.Errorf("3.x imbalance is %s", f.Severity)
	}
}

// TestDoctorKCL3Healthy: a heartbeating leader and a handoff younger than
// the timeout are information only.
func TestDoctorKCL3Healthy(t *testing.T) {
	r := newRig(t, time.Second, 3*time.Second)
	r.create(leasecore.Lease{LeaseKey: shard(0), LeaseOwner: "w1", LeaseCounter: 3})
	r.create(leasecore.Lease{LeaseKey: shard(1), LeaseOwner: "w1", CheckpointOwner: "w2", LeaseCounter: 3})
	r.create(leasecore.Lease{LeaseKey: shard(2), LeaseOwner: "w2", LeaseCounter: 3})
	rep := r.run(func(i int) {
		r.leaderLock("w1", fmt.Sprintf("v%d", i))
		r.workerMetrics("w1", r.clock.Now())
		r.workerMetrics("w2", r.clock.Now())
		if i > 0 {
			r.renewAll()
		}
	})
	if w := rep.AtLeast(SeverityWarn); len(w) > 0 {
		t.Fatalf("warnings:\n%s", dump(rep))
	}
	want(t, rep, FindLeader, SeverityInfo, "KCL 3.x leader: w1")
	want(t, rep, FindHandoff, SeverityInfo, "1 lease in KCL 3.x graceful handoff; stuck only after 31s")
}

// TestDoctorKCL3LegacyTables: KCL 3.0–3.4 keep the leader lock and worker
// metrics in <app>-CoordinatorState and <app>-WorkerMetricStats.
func TestDoctorKCL3LegacyTables(t *testing.T) {
	r := newRig(t, time.Second, time.Second)
	ctx := context.Background()
	for _, tbl := range []struct{ suffix, key string }{{"-CoordinatorState", "key"}, {"-WorkerMetricStats", "wid"}} {
		_, err := r.ddb.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String(r.table + tbl.suffix), BillingMode: ddbtypes.BillingModePayPerRequest,
			KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String(tbl.key), KeyType: ddbtypes.KeyTypeHash}},
			AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String(tbl.key), AttributeType: ddbtypes.ScalarAttributeTypeS}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond) // dynalite's createTableMs is 20
	put := func(table string, item map[string]ddbtypes.AttributeValue) {
		if _, err := r.ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	put(r.table+"-CoordinatorState", map[string]ddbtypes.AttributeValue{"key": s("Leader"), "ownerName": s("w9"), "leaseDuration": s("120000"), "recordVersionNumber": s("x")})
	put(r.table+"-WorkerMetricStats", map[string]ddbtypes.AttributeValue{"wid": s("w1"), "lut": n(r.clock.Now().Add(-time.Hour).Unix())})
	r.create(leasecore.Lease{LeaseKey: shard(0), LeaseOwner: "w1", LeaseCounter: 3})
	rep := r.run(func(i int) {
		if i > 0 {
			r.renewAll()
		}
	})
	want(t, rep, FindLeaderStale, SeverityWarn, "leader w9 renews no lease")
	want(t, rep, FindStaleMetrics, SeverityWarn, "w1")
	// The side tables are read through coordination's readers: the lock
	// once per read, the metrics once per report.
	if rep.Cost.LegacyScans != 0 || rep.Cost.Coordination == 0 {
		t.Errorf("legacy scans %d, coordination reads %d", rep.Cost.LegacyScans, rep.Cost.Coordination)
	}
}
