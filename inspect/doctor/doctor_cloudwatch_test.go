package doctor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/leasecore"
)

// provisionedRig is a rig whose lease table is PROVISIONED with the given
// WCU (and 10 RCU), as KCL ≤ 2.3.4 created it.
func provisionedRig(t *testing.T, wcu int64, failover, window time.Duration) *rig {
	return provisionedRigRW(t, 10, wcu, failover, window)
}

// provisionedRigRW is provisionedRig with the RCU given too.
func provisionedRigRW(t *testing.T, rcu, wcu int64, failover, window time.Duration) *rig {
	r := newRig(t, failover, window)
	r.table += "-prov" // the on-demand table newRig made stays unused
	_, err := r.ddb.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName: aws.String(r.table), BillingMode: ddbtypes.BillingModeProvisioned,
		ProvisionedThroughput: &ddbtypes.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(rcu), WriteCapacityUnits: aws.Int64(wcu)},
		KeySchema:             []ddbtypes.KeySchemaElement{{AttributeName: aws.String("leaseKey"), KeyType: ddbtypes.KeyTypeHash}},
		AttributeDefinitions:  []ddbtypes.AttributeDefinition{{AttributeName: aws.String("leaseKey"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
	})
	if err != nil {
		t.Fatal(err)
	}
	w := dynamodb.NewTableExistsWaiter(r.ddb, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 20*time.Millisecond, 200*time.Millisecond
	})
	if err := w.Wait(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(r.table)}, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestDoctorCloudWatch serves throttling, iterator age and KCL metrics from
// the in-test CloudWatch: every CloudWatch finding, from one GetMetricData
// request, next to the capacity finding of an under-provisioned table.
func TestDoctorCloudWatch(t *testing.T) {
	r := provisionedRig(t, 2, time.Second, 2*time.Second).withCloudWatch()
	r.stream = "orders" // named, not probed: no Kinesis client in this rig
	r.fleet("w1", "w1", "w1", "w1", "w2", "w2", "w2", "w2")
	at := r.clock.Now().Add(-time.Minute)
	ddb := func(metric string, v float64, dims ...string) {
		d := map[string]string{"TableName": r.table}
		for i := 0; i < len(dims); i += 2 {
			d[dims[i]] = dims[i+1]
		}
		r.cw.Add("AWS/DynamoDB", metric, d, at, v)
	}
	ddb("ThrottledRequests", 30, "Operation", "UpdateItem")
	ddb("ThrottledRequests", 7, "Operation", "Scan")
	ddb("WriteThrottleEvents", 30)
	ddb("ConsumedWriteCapacityUnits", 120)
	r.cw.Add("AWS/Kinesis", "GetRecords.IteratorAgeMilliseconds", map[string]string{"StreamName": "orders"}, at, 200000)
	kcl := func(metric string, v float64, dims ...string) {
		d := map[string]string{}
		for i := 0; i < len(dims); i += 2 {
			d[dims[i]] = dims[i+1]
		}
		r.cw.Add(r.table, metric, d, at, v)
	}
	kcl("LostLeases", 12, "Operation", "RenewAllLeases", "WorkerIdentifier", "w1")
	kcl("LostLeases", 3, "Operation", "RenewAllLeases", "WorkerIdentifier", "w2")
	kcl("TakenLeases", 14, "Operation", "TakeLeases", "WorkerIdentifier", "w2")
	kcl("MillisBehindLatest", 300000, "Operation", "ProcessTask", "ShardId", shard(3))
	kcl("MillisBehindLatest", 1000, "Operation", "ProcessTask", "ShardId", shard(4))
	kcl("MillisBehindLatest", 300000, "Operation", "ApplicationTracker")
	// outside the metrics window: ignored
	r.cw.Add("AWS/DynamoDB", "ThrottledRequests", map[string]string{"TableName": r.table, "Operation": "UpdateItem"}, at.Add(-time.Hour), 1000)

	rep := r.run(func(i int) {
		if i > 0 {
			r.renewAll()
		}
	})
	f := want(t, rep, FindTableThrottled, SeverityCritical,
		"lease table throttled 37 times in 5m0s (Scan 7, UpdateItem 30) while 2 workers renew 8 leases")
	if !strings.Contains(f.Fix, "raise its WCU to at least 39") {
		t.Errorf("fix %q", f.Fix)
	}
	c := want(t, rep, FindTableCapacity, SeverityCritical, "lease table has 2 WCU but the fleet needs about 25.9 writes/s (8 leases renewed every 308ms)")
	if c.Evidence.Values["peakConsumedWCU"] != 2 || c.Evidence.Values["recommendedWCU"] != 39 {
		t.Errorf("capacity values %v", c.Evidence.Values)
	}
	want(t, rep, FindIteratorAge, SeverityWarn, "Kinesis iterator age up to 3m20s (over 1m0s) on orders")
	m := want(t, rep, FindKCLLeaseMoves, SeverityWarn, "LostLeases 15, TakenLeases 14")
	if !strings.Contains(m.Cause, "throttled 37 times") {
		t.Errorf("lease moves cause %q", m.Cause)
	}
	l := want(t, rep, FindKCLLag, SeverityWarn, "up to 5m0s", shard(3))
	if contains(l.Evidence.Shards, shard(4)) {
		t.Errorf("shard 4 is not lagging: %v", l.Evidence.Shards)
	}
	absent(t, rep, FindCloudWatchSkipped, FindKCLMetricsAbsent)
	if got := r.cw.Calls("GetMetricData"); got != 1 || rep.Cost.GetMetricData != 1 || rep.Cost.Metrics < 20 {
		t.Errorf("%d GetMetricData requests (cost %+v), want one batch", got, rep.Cost)
	}
}

// TestDoctorWithoutCloudWatchAccess names what it skipped and runs the rest.
func TestDoctorWithoutCloudWatchAccess(t *testing.T) {
	r := provisionedRig(t, 2, time.Second, time.Second).withCloudWatch()
	r.cw.Deny("AccessDeniedException")
	r.fleet("w1", "w1", "w2", "w2")
	rep := r.run(func(i int) {
		if i > 0 {
			r.renewAll()
		}
	})
	f := want(t, rep, FindCloudWatchSkipped, SeverityInfo, "AccessDeniedException", "cloudwatch:GetMetricData")
	if !strings.Contains(f.Evidence.Lines[0], "ThrottledRequests") || !strings.Contains(f.Evidence.Lines[0], "MillisBehindLatest") {
		t.Errorf("skipped checks not named: %v", f.Evidence.Lines)
	}
	want(t, rep, FindTableCapacity, SeverityCritical)
	absent(t, rep, FindTableThrottled, FindKCLMetricsAbsent)
}

// TestDoctorKCLMetricsAbsent: CloudWatch answers but the namespace is empty.
func TestDoctorKCLMetricsAbsent(t *testing.T) {
	r := newRig(t, time.Second, time.Second).withCloudWatch()
	r.fleet("w1")
	rep := r.run(func(i int) {
		if i > 0 {
			r.renewAll()
		}
	})
	want(t, rep, FindKCLMetricsAbsent, SeverityInfo, r.table)
	absent(t, rep, FindCloudWatchSkipped)
}

// TestDoctorPerShardIteratorAge: with shard-level enhanced monitoring on,
// iterator age is read per shard and names the lagging one; the stream
// average would hide it.
func TestDoctorPerShardIteratorAge(t *testing.T) {
	r := newRig(t, time.Second, time.Second).withStream(2).withCloudWatch()
	if _, err := r.kin.EnableEnhancedMonitoring(context.Background(), &kinesis.EnableEnhancedMonitoringInput{
		StreamName: aws.String(r.stream), ShardLevelMetrics: []kintypes.MetricsName{kintypes.MetricsNameIteratorAgeMilliseconds},
	}); err != nil {
		t.Fatal(err)
	}
	at := r.clock.Now().Add(-time.Minute)
	r.cw.Add("AWS/Kinesis", "IteratorAgeMilliseconds", map[string]string{"StreamName": r.stream, "ShardId": shard(1)}, at, 600000)
	r.cw.Add("AWS/Kinesis", "IteratorAgeMilliseconds", map[string]string{"StreamName": r.stream, "ShardId": shard(0)}, at, 10)
	// the stream-level series is not read when per-shard is on
	r.cw.Add("AWS/Kinesis", "GetRecords.IteratorAgeMilliseconds", map[string]string{"StreamName": r.stream}, at, 900000)
	for i := range 2 {
		r.create(leasecore.Lease{LeaseKey: shard(i), LeaseOwner: "w1", LeaseCounter: 1, Checkpoint: leasecore.SequenceNumber{SequenceNumber: leasecore.LATEST}})
	}
	rep := r.run(func(i int) {
		if i > 0 {
			r.renewAll()
		}
	})
	f := want(t, rep, FindIteratorAge, SeverityWarn, "up to 10m0s", r.stream+"/"+shard(1))
	if len(f.Evidence.Shards) != 1 || f.Evidence.Shards[0] != shard(1) || !strings.Contains(f.Cause, "per-shard") {
		t.Errorf("evidence %+v cause %q", f.Evidence, f.Cause)
	}
	if rep.Cost.DescribeStream != 1 {
		t.Errorf("cost %+v: want one DescribeStreamSummary", rep.Cost)
	}
}
