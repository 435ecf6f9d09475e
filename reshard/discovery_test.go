package reshard

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// TestLineageOfSplitAndMerge builds the lineage graph from a stream really
// split and merged in kinesis-local, listed two shards per page.
func TestLineageOfSplitAndMerge(t *testing.T) {
	t.Parallel()
	s := newScenario(t)
	shards, err := ListShards(context.Background(), s.kin, Stream{Name: s.stream}, ListOptions{PageSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGraph(shards)
	if err != nil {
		t.Fatal(err)
	}
	if g.Len() != 5 {
		t.Fatalf("graph has %d shards, want 5 (paging lost some?): %v", g.Len(), g.TopoOrder())
	}
	check := func(what string, got, want []string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	check("parents of merged", g.Parents(s.merged), []string{s.right, s.root1})
	check("parents of left", g.Parents(s.left), []string{s.root0})
	check("children of root0", g.Children(s.root0), sorted(s.left, s.right))
	check("children of root1", g.Children(s.root1), []string{s.merged})
	check("children of right", g.Children(s.right), []string{s.merged})
	check("roots", sorted(g.Roots()...), sorted(s.root0, s.root1))
	check("open", sorted(g.OpenShards()...), sorted(s.left, s.merged))
	check("ancestors of merged", sorted(g.Ancestors(s.merged)...), sorted(s.root0, s.root1, s.right))
	check("descendants of root0", sorted(g.Descendants(s.root0)...), sorted(s.left, s.right, s.merged))

	m, _ := g.Node(s.merged)
	if m.ParentShardID != s.right || m.AdjacentParentShardID != s.root1 || !m.IsMergeChild() || !m.Open {
		t.Errorf("merged node = %+v", m)
	}
	// kinesis-local reports a bogus EndingSequenceNumber on closed shards;
	// closed-ness must come from its presence alone.
	for _, id := range []string{s.root0, s.root1, s.right} {
		if n, _ := g.Node(id); n.Open {
			t.Errorf("%s is closed but the graph says open", id)
		}
	}
	// Shares: the roots halve the key space, the split quarters the low half,
	// the merge child holds the upper three quarters. Tiny deviations come
	// from kinesis-local's odd boundaries.
	for id, want := range map[string]float64{s.root0: 0.5, s.root1: 0.5, s.left: 0.25, s.right: 0.25, s.merged: 0.75} {
		if n, _ := g.Node(id); n.Share() < want-1e-9 || n.Share() > want+1e-9 {
			t.Errorf("share of %s = %v, want %v", id, n.Share(), want)
		}
	}
	if err := g.CheckTiling(g.OpenShards()); err != nil {
		t.Errorf("open shards do not tile: %v", err)
	}
	order := g.TopoOrder()
	for _, e := range g.Edges() {
		if slices.Index(order, e.Parent) > slices.Index(order, e.Child) {
			t.Errorf("TopoOrder %v puts %s before its parent %s", order, e.Child, e.Parent)
		}
	}
	if len(g.Edges()) != 4 {
		t.Errorf("edges = %+v", g.Edges())
	}
}

// TestListShardsPagesAndRetries puts a throttling proxy in front of
// kinesis-local: LimitExceededException on the first page and again on a
// later page must be retried with backoff (the SDK's own retries are off),
// and pages after the first must carry only NextToken.
func TestListShardsPagesAndRetries(t *testing.T) {
	t.Parallel()
	s := newScenario(t)
	proxy := newFaultProxy(t, emulator.KinesisEndpoint(t), "ListShards", "LimitExceededException", 2)
	kin := kinesis.NewFromConfig(noRetryConfig(), func(o *kinesis.Options) { o.BaseEndpoint = aws.String(proxy.URL) })
	clock := &instantClock{}
	var retried []string
	retry := Retry{Clock: clock, OnRetry: func(op string, attempt int, err error) { retried = append(retried, op) }}

	shards, err := ListShards(context.Background(), kin, Stream{Name: s.stream}, ListOptions{PageSize: 2, Retry: retry})
	if err != nil {
		t.Fatal(err)
	}
	if len(shards) != 5 {
		t.Errorf("got %d shards, want 5", len(shards))
	}
	if len(retried) != 2 || len(clock.Waits()) != 2 {
		t.Errorf("retries %v, waits %v; want 2 of each", retried, clock.Waits())
	}
	for _, w := range clock.Waits() {
		if w <= 0 || w > 5e9 {
			t.Errorf("backoff wait %v outside (0, 5s]", w)
		}
	}
	bodies := proxy.Bodies()
	if len(bodies) != 3 {
		t.Fatalf("forwarded %d ListShards calls, want 3 pages", len(bodies))
	}
	if !strings.Contains(bodies[0], `"StreamName"`) {
		t.Errorf("first page lacks StreamName: %s", bodies[0])
	}
	for _, b := range bodies[1:] {
		if strings.Contains(b, "StreamName") || !strings.Contains(b, "NextToken") {
			t.Errorf("later page must carry NextToken only: %s", b)
		}
	}

	// A failure mid-listing resumes from the same token.
	proxy.failAgain(1)
	var calls int
	retry.OnRetry = func(string, int, error) { calls++ }
	shards, err = ListShards(context.Background(), kin, Stream{Name: s.stream}, ListOptions{PageSize: 4, Retry: retry})
	if err != nil || len(shards) != 5 || calls != 1 {
		t.Errorf("second listing: %d shards, %d retries, err %v", len(shards), calls, err)
	}

	// Retries are bounded, and the error says what failed.
	proxy.failAgain(100)
	_, err = ListShards(context.Background(), kin, Stream{Name: s.stream}, ListOptions{Retry: Retry{Clock: clock, MaxRetries: 3}})
	if err == nil || !strings.Contains(err.Error(), "LimitExceededException") {
		t.Errorf("after exhausting retries: %v", err)
	}
	proxy.failAgain(0)

	// Errors that are not throttling are not retried.
	_, err = ListShards(context.Background(), kin, Stream{Name: "no-such-stream"}, ListOptions{Retry: Retry{Clock: clock,
		OnRetry: func(string, int, error) { t.Error("retried a ResourceNotFoundException") }}})
	var rnf *types.ResourceNotFoundException
	if !errors.As(err, &rnf) {
		t.Errorf("missing stream: %v", err)
	}
}

func sorted(ids ...string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}
