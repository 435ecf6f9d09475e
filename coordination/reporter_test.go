package coordination

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/testenv/clocktest"
)

var t0 = time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC)

// seqSampler returns its values in turn; a NaN is a failed capture.
type seqSampler struct {
	mu   sync.Mutex
	vals []float64
}

func (s *seqSampler) Name() string          { return "C" }
func (s *seqSampler) MaxUtilization() int64 { return 100 }
func (s *seqSampler) Sample() (float64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.vals) == 0 {
		return 0, errors.New("no value")
	}
	v := s.vals[0]
	s.vals = s.vals[1:]
	return v, nil
}

// ddbJSON renders an item as DynamoDB JSON, the form the golden files hold.
func ddbJSON(av types.AttributeValue) any {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return map[string]any{"S": v.Value}
	case *types.AttributeValueMemberN:
		return map[string]any{"N": v.Value}
	case *types.AttributeValueMemberM:
		m := map[string]any{}
		for k, e := range v.Value {
			m[k] = ddbJSON(e)
		}
		return map[string]any{"M": m}
	case *types.AttributeValueMemberL:
		l := []any{}
		for _, e := range v.Value {
			l = append(l, ddbJSON(e))
		}
		return map[string]any{"L": l}
	}
	return map[string]any{"?": av}
}

func itemJSON(t *testing.T, it item) string {
	t.Helper()
	m := map[string]any{}
	for k, v := range it {
		m[k] = ddbJSON(v)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func golden(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

func (r *rig) get(table, keyAttr, key string) item {
	r.t.Helper()
	out, err := r.c.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: item{keyAttr: sv(key)},
	})
	if err != nil {
		r.t.Fatal(err)
	}
	return out.Item
}

// The item written to the side table, attribute by attribute, against
// WorkerMetricStats' @DynamoDbAttribute names and types: three reports,
// the second with no capture (-1), the third rounded to 6 decimals.
func TestReporterItemGolden(t *testing.T) {
	r := newRig(t, true, true)
	r.migration(r.tb.CoordinatorState, ClientVersion3X)
	st := r.detect()
	clk := clocktest.New(t0.Add(2 * time.Second))
	s := &seqSampler{vals: []float64{12.5, 13.5, 100.0 / 3}}
	rep := NewReporter(r.c, r.tb, "kcltool-worker-1", clk, ReporterOptions{Samplers: []Sampler{s}})
	rep.SetState(st)
	ctx := context.Background()
	rep.capture()
	rep.capture()
	if err := rep.Report(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rep.Report(ctx); err != nil { // nothing captured since: -1
		t.Fatal(err)
	}
	rep.capture()
	if err := rep.Report(ctx); err != nil {
		t.Fatal(err)
	}
	got := itemJSON(t, r.get(r.tb.WorkerMetrics, "wid", "kcltool-worker-1"))
	if want := golden(t, "worker-metrics-cpu.json"); got != want {
		t.Fatalf("item\n got %s\nwant %s", got, want)
	}
	// And the reader sees it as the leader would: fresh, opr for every
	// sts key, last sample not -1.
	ms, err := ListWorkerMetrics(ctx, r.c, r.tb, st)
	if err != nil || len(ms) != 1 || !ms[0].SupportsMigration || ms[0].OperatingRange["C"][0] != 100 {
		t.Fatalf("ListWorkerMetrics = %+v, %v", ms, err)
	}
}

// No sampler (off EC2, ECS and EKS): sts and opr are empty maps, in the
// lease table keyed leaseKey and tagged entityType.
func TestReporterItemNoSamplerLeaseTable(t *testing.T) {
	r := newRig(t, true, false)
	r.migration(r.tb.Lease, ClientVersion3X)
	clk := clocktest.New(t0.Add(2 * time.Second))
	rep := NewReporter(r.c, r.tb, "kcltool-worker-1", clk, ReporterOptions{})
	rep.SetState(r.detect())
	if err := rep.Report(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := itemJSON(t, r.get(r.tb.Lease, "leaseKey", "kcltool-worker-1"))
	if want := golden(t, "worker-metrics-none.json"); got != want {
		t.Fatalf("item\n got %s\nwant %s", got, want)
	}
}

// Written where the state says; SetState moves the writes; a state that
// asks for no metrics (cv 2X) writes nothing.
func TestReporterFollowsState(t *testing.T) {
	r := newRig(t, true, true)
	r.migration(r.tb.CoordinatorState, ClientVersion3X)
	r.tableMigration(r.tb.CoordinatorState, TableMigrationDeployed)
	clk := clocktest.New(t0)
	rep := NewReporter(r.c, r.tb, "w1", clk, ReporterOptions{})
	ctx := context.Background()

	rep.SetState(r.detect())
	if err := rep.Report(ctx); err != nil {
		t.Fatal(err)
	}
	if r.get(r.tb.WorkerMetrics, "wid", "w1") == nil || r.get(r.tb.Lease, "leaseKey", "w1") != nil {
		t.Fatal("DEPLOYED: want the item in the side table only")
	}

	r.tableMigration(r.tb.CoordinatorState, TableMigrationPending)
	st := r.detect()
	if st.Layout != LayoutPending {
		t.Fatalf("layout %v", st.Layout)
	}
	rep.SetState(st)
	clk.Advance(30 * time.Second)
	if err := rep.Report(ctx); err != nil {
		t.Fatal(err)
	}
	lt := r.get(r.tb.Lease, "leaseKey", "w1")
	if lt == nil || strAttr(lt, "entityType") != EntityWorkerMetrics {
		t.Fatalf("PENDING: lease-table item %v", lt)
	}
	// The reader merges both and takes the newer.
	ms, err := ListWorkerMetrics(ctx, r.c, r.tb, st)
	if err != nil || len(ms) != 1 || ms[0].Table != r.tb.Lease || !ms[0].LastUpdate.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("ListWorkerMetrics = %+v, %v", ms, err)
	}

	r.migration(r.tb.Lease, ClientVersion2X)
	r.put(r.tb.CoordinatorState, r.keyed(r.tb.CoordinatorState, "Migration3.0", "", item{"cv": sv(ClientVersion2X)}))
	st = r.detect()
	if st.ReportMetrics {
		t.Fatalf("cv 2X: %+v", st)
	}
	rep.SetState(st)
	clk.Advance(30 * time.Second)
	if err := rep.Report(ctx); err != nil {
		t.Fatal(err)
	}
	if lut := epochSeconds(r.get(r.tb.Lease, "leaseKey", "w1"), "lut"); !lut.Equal(t0.Add(30 * time.Second)) {
		t.Fatalf("cv 2X: item rewritten (lut %v)", lut)
	}
}

// A worker id equal to a lease key never overwrites the lease.
func TestReporterNeverOverwritesALease(t *testing.T) {
	r := newRig(t, true, false)
	r.migration(r.tb.Lease, ClientVersion3X)
	r.lease("shardId-000000000000", "someone")
	rep := NewReporter(r.c, r.tb, "shardId-000000000000", clocktest.New(t0), ReporterOptions{})
	rep.SetState(r.detect())
	err := rep.Report(context.Background())
	if err == nil || !strings.Contains(err.Error(), "must differ from every lease key") {
		t.Fatalf("Report error = %v", err)
	}
	l := r.get(r.tb.Lease, "leaseKey", "shardId-000000000000")
	if strAttr(l, "leaseOwner") != "someone" || l["lut"] != nil {
		t.Fatalf("lease touched: %v", l)
	}
}

// The schedule on the fake clock: a first report two capture intervals
// after Start, then one per period; captures every second are averaged.
func TestReporterPeriod(t *testing.T) {
	r := newRig(t, true, false)
	r.migration(r.tb.Lease, ClientVersion3X)
	clk := clocktest.New(t0)
	vals := make([]float64, 100)
	for i := range vals {
		vals[i] = float64(i + 1)
	}
	rep := NewReporter(r.c, r.tb, "w1", clk, ReporterOptions{Samplers: []Sampler{&seqSampler{vals: vals}}})
	rep.SetState(r.detect())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep.Start(ctx)
	step := func(d time.Duration) {
		t.Helper()
		if err := clk.WaitTimers(ctx, 1); err != nil {
			t.Fatal(err)
		}
		clk.Advance(d)
		if err := clk.WaitTimers(ctx, 1); err != nil { // the loop is asleep again
			t.Fatal(err)
		}
	}
	samples := func() []float64 {
		return decodeWorkerMetrics(r.get(r.tb.Lease, "leaseKey", "w1"), "leaseKey", "").Samples["C"]
	}
	step(time.Second)
	step(time.Second)
	if rep.Reports() != 1 || rep.Err() != nil {
		t.Fatalf("at 2s: %d reports, %v", rep.Reports(), rep.Err())
	}
	if got := samples(); len(got) != 1 || got[0] != 1.5 { // captures 1 and 2
		t.Fatalf("first report sts %v", got)
	}
	for i := 0; i < 29; i++ {
		step(time.Second)
	}
	if rep.Reports() != 1 {
		t.Fatalf("at 31s: %d reports, want 1", rep.Reports())
	}
	step(time.Second)
	if rep.Reports() != 2 {
		t.Fatalf("at 32s: %d reports, want 2", rep.Reports())
	}
	if got := samples(); len(got) != 2 || got[1] != 17.5 { // captures 3..32
		t.Fatalf("second report sts %v", got)
	}
	if lut := epochSeconds(r.get(r.tb.Lease, "leaseKey", "w1"), "lut"); !lut.Equal(t0.Add(32 * time.Second)) {
		t.Fatalf("lut %v", lut)
	}
	if err := rep.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if r.get(r.tb.Lease, "leaseKey", "w1") == nil {
		t.Fatal("Stop deleted the item; the KCL leaves it")
	}
}

// sts keeps the last DefaultHistory samples.
func TestReporterHistory(t *testing.T) {
	rep := NewReporter(nil, Tables{}, "w1", clocktest.New(t0), ReporterOptions{Samplers: []Sampler{&seqSampler{vals: []float64{}}}})
	var got []float64
	for i := 0; i < 12; i++ {
		rep.raw["C"] = []float64{float64(i)}
		got = rep.computeLocked()["C"]
	}
	if len(got) != 10 || got[0] != 2 || got[9] != 11 {
		t.Fatalf("history %v", got)
	}
}

// Under tm DEPLOYED a Java worker writes where its own setting says; the
// leader waits for the side table to hold no live metrics before PENDING.
// kcltool writes as the fleet does: to the lease table once another
// worker's live item is there, to the side table while none is.
func TestReporterDeployedFollowsTheFleet(t *testing.T) {
	for _, c := range []struct {
		name      string
		javaAge   time.Duration // age of java-1's lease-table item; 0: none
		wantLease bool
	}{
		{"phase 1 fleet", 0, false},
		{"phase 2 fleet", 10 * time.Second, true},
		{"phase 2 worker gone", 61 * time.Second, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, true, true)
			r.migration(r.tb.CoordinatorState, ClientVersion3X)
			r.tableMigration(r.tb.CoordinatorState, TableMigrationDeployed)
			now := t0.Add(time.Hour)
			if c.javaAge > 0 {
				r.metrics(r.tb.Lease, "java-1", now.Add(-c.javaAge).Unix(), 10)
			}
			rep := NewReporter(r.c, r.tb, "w1", clocktest.New(now), ReporterOptions{})
			rep.SetState(r.detect())
			if err := rep.Report(context.Background()); err != nil {
				t.Fatal(err)
			}
			inLease := r.get(r.tb.Lease, "leaseKey", "w1") != nil
			inSide := r.get(r.tb.WorkerMetrics, "wid", "w1") != nil
			if want := map[bool]string{true: r.tb.Lease, false: r.tb.WorkerMetrics}[c.wantLease]; rep.Table() != want {
				t.Fatalf("Table() = %q, want %q", rep.Table(), want)
			}
			if inLease != c.wantLease || inSide == c.wantLease {
				t.Fatalf("item in lease table %v, in side table %v; want lease %v", inLease, inSide, c.wantLease)
			}
		})
	}
}

func TestSkipPast(t *testing.T) {
	if got := skipPast(t0, t0.Add(95*time.Second), 30*time.Second); !got.Equal(t0.Add(120 * time.Second)) {
		t.Fatalf("skipPast = %v", got)
	}
	if got := skipPast(t0, t0, 30*time.Second); !got.Equal(t0.Add(30 * time.Second)) {
		t.Fatalf("skipPast at the tick = %v", got)
	}
}

// A worker stopped for minutes (SIGSTOP, a suspended VM) writes one item
// when it runs again, not one per period missed.
func TestReporterSkipsMissedPeriods(t *testing.T) {
	r := newRig(t, true, false)
	r.migration(r.tb.Lease, ClientVersion3X)
	clk := clocktest.New(t0)
	rep := NewReporter(r.c, r.tb, "w1", clk, ReporterOptions{})
	rep.SetState(r.detect())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep.Start(ctx)
	defer func() { _ = rep.Stop(ctx) }()
	for _, d := range []time.Duration{2 * time.Second, 95 * time.Second} {
		if err := clk.WaitTimers(ctx, 1); err != nil {
			t.Fatal(err)
		}
		clk.Advance(d)
	}
	if err := clk.WaitTimers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if rep.Reports() != 2 {
		t.Fatalf("%d reports, want 2", rep.Reports())
	}
	if next, _ := clk.Next(); !next.Equal(t0.Add(122 * time.Second)) {
		t.Fatalf("next report at %v, want +122s", next.Sub(t0))
	}
}
