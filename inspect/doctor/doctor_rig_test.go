package doctor

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kcltool/kcltool/internal/testenv/clocktest"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

func TestMain(m *testing.M) { os.Exit(emulator.Main(m)) }

// rig drives a doctor run through the real DynamoDB (and Kinesis) wire
// protocol, with a fake clock: before each read the test's step changes the
// table the way workers would, then the clock jumps one failover time. Every
// finding is then reproducible to the request.
type rig struct {
	t        *testing.T
	ddb      *dynamodb.Client
	kin      *kinesis.Client
	cw       *emulator.MetricStore
	table    string
	stream   string
	clock    *clocktest.Clock
	failover time.Duration
	window   time.Duration
	leases   map[string]leasecore.Lease // as last written by the rig
	opt      Options
	// kinVia, when set, is where doctor's Kinesis calls go (a fault
	// proxy); the rig's own calls go direct.
	kinVia string
	// ddbVia, when set, wraps doctor's DynamoDB client (to show what the
	// emulator cannot hold, such as an index still CREATING).
	ddbVia func(TableAPI) TableAPI
}

func newRig(t *testing.T, failover, window time.Duration) *rig {
	t.Helper()
	r := &rig{t: t, ddb: emulator.DynamoDB(t), table: emulator.Name(t, "doc"), failover: failover, window: window,
		clock: clocktest.New(time.Now().UTC().Truncate(time.Second)), leases: map[string]leasecore.Lease{}}
	emulator.CreateLeaseTable(t, r.ddb, r.table)
	return r
}

// withStream gives the rig a Kinesis stream of n shards.
func (r *rig) withStream(n int32) *rig {
	r.kin = emulator.Kinesis(r.t)
	r.stream = emulator.Name(r.t, "s")
	emulator.CreateStream(r.t, r.kin, r.stream, n)
	return r
}

// withCloudWatch gives the rig the in-test CloudWatch.
func (r *rig) withCloudWatch() *rig {
	r.cw = emulator.NewMetricStore(r.t)
	return r
}

// create writes a lease as KCL would.
func (r *rig) create(l leasecore.Lease) {
	r.t.Helper()
	if l.Checkpoint.SequenceNumber == "" {
		l.Checkpoint.SequenceNumber = leasecore.TRIM_HORIZON
	}
	if _, err := leasecore.CreateLease(context.Background(), r.ddb, r.table, l); err != nil {
		r.t.Fatal(err)
	}
	r.leases[l.LeaseKey] = l
}

// putItem writes a raw item (KCL 3.x entities).
func (r *rig) putItem(item map[string]ddbtypes.AttributeValue) {
	r.t.Helper()
	if _, err := r.ddb.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(r.table), Item: item}); err != nil {
		r.t.Fatal(err)
	}
}

// renew is the owner's conditional renewal.
func (r *rig) renew(key string) {
	r.t.Helper()
	l := r.leases[key]
	next, err := leasecore.RenewLease(context.Background(), r.ddb, r.table, l, l.LeaseOwner)
	if err != nil {
		r.t.Fatal(err)
	}
	r.leases[key] = next
}

// take is the 2.x taker's (or a steal's) conditional take.
func (r *rig) take(key, worker string) {
	r.t.Helper()
	taken, ok, err := leasecore.TakeLease(context.Background(), r.ddb, r.table, r.leases[key], worker)
	if err != nil || !ok {
		r.t.Fatalf("take %s for %s: ok=%v err=%v", key, worker, ok, err)
	}
	r.leases[key] = taken
}

// checkpoint writes a checkpoint, conditional on the counter, as the owner.
func (r *rig) checkpoint(key, seq string) {
	r.t.Helper()
	next, err := leasecore.CheckpointLease(context.Background(), r.ddb, r.table, r.leases[key], leasecore.SequenceNumber{SequenceNumber: seq})
	if err != nil {
		r.t.Fatal(err)
	}
	r.leases[key] = next
}

func (r *rig) apis() APIs {
	a := APIs{DynamoDB: r.ddb}
	if r.ddbVia != nil {
		a.DynamoDB = r.ddbVia(r.ddb)
	}
	if r.kin != nil {
		a.Kinesis = r.kin
	}
	if r.kinVia != "" {
		a.Kinesis = kinesis.NewFromConfig(emulator.Config(), func(o *kinesis.Options) { o.BaseEndpoint = aws.String(r.kinVia) })
	}
	if r.cw != nil {
		a.CloudWatch = cloudwatch.NewFromConfig(emulator.Config(), func(o *cloudwatch.Options) { o.BaseEndpoint = aws.String(r.cw.URL) })
	}
	return a
}

func (r *rig) options() Options {
	o := r.opt
	o.Table, o.Stream, o.Window, o.FailoverTime, o.Clock = r.table, r.stream, r.window, r.failover, r.clock
	if r.cw == nil && o.CloudWatchSkipped == "" {
		o.CloudWatchSkipped = "--no-cloudwatch"
	}
	return o
}

// run runs the doctor; step(i) runs before read i (step(0) before the first).
func (r *rig) run(step func(i int)) *Report {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d, err := New(ctx, r.apis(), r.options())
	if err != nil {
		r.t.Fatal(err)
	}
	step(0)
	type result struct {
		rep *Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := d.Run(ctx)
		done <- result{rep, err}
	}()
	for i := 1; i < d.samplesPerWindow(); i++ {
		if err := r.clock.WaitTimers(ctx, 1); err != nil {
			r.t.Fatal(err)
		}
		step(i)
		r.clock.Advance(r.failover)
	}
	res := <-done
	if res.err != nil {
		r.t.Fatal(res.err)
	}
	return res.rep
}

// find returns the finding with the id, failing the test without one.
func find(t *testing.T, rep *Report, id string) Finding {
	t.Helper()
	for _, f := range rep.Findings {
		if f.ID == id {
			return f
		}
	}
	t.Fatalf("no %s finding; findings:\n%s", id, dump(rep))
	return Finding{}
}

func absent(t *testing.T, rep *Report, ids ...string) {
	t.Helper()
	for _, f := range rep.Findings {
		for _, id := range ids {
			if f.ID == id {
				t.Errorf("unexpected %s finding: %s\n%s", id, f.Summary, dump(rep))
			}
		}
	}
}

func want(t *testing.T, rep *Report, id string, sev Severity, summaryHas ...string) Finding {
	t.Helper()
	f := find(t, rep, id)
	if f.Severity != sev {
		t.Errorf("%s: severity %s, want %s (%s)", id, f.Severity, sev, f.Summary)
	}
	for _, s := range summaryHas {
		if !strings.Contains(f.Summary, s) {
			t.Errorf("%s: summary %q lacks %q", id, f.Summary, s)
		}
	}
	return f
}

func dump(rep *Report) string {
	var b strings.Builder
	for _, f := range rep.Findings {
		b.WriteString("  " + f.Severity.String() + " " + f.ID + ": " + f.Summary + "\n")
		for _, l := range f.Evidence.Lines {
			b.WriteString("      " + l + "\n")
		}
		b.WriteString("      cause: " + f.Cause + "\n")
	}
	return b.String()
}

func shard(n int) string { return fmt.Sprintf("shardId-%012d", n) }
