package cmd

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/cmd/run"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// efoEnv reaches kinesis-local through the harness's EFO proxy (which makes
// up the initial-response event the SDK needs) and ends each subscription
// early, so that the fleet also resubscribes.
func efoEnv(t *testing.T, subscriptionMax string) []string {
	return []string{"AWS_ENDPOINT_URL_KINESIS=" + emulator.KinesisEFOEndpoint(t), run.EFOSubscriptionMaxEnv + "=" + subscriptionMax}
}

// TestRunFleetWithEFO is the fleet scenario (split, merge, kill -9, a third
// worker, each key's order) read with enhanced fan-out. kinesis-local's
// subscriptions never end a shard with ChildShards, so every parent's end is
// confirmed with GetRecords once the listing shows it closed.
func TestRunFleetWithEFO(t *testing.T) {
	t.Parallel() // long, and mostly waiting on the local servers: it overlaps others on CI's two cores
	s := newE2EStack(t, 4)
	out := filepath.Join(t.TempDir(), "handled.jsonl")
	args := func(id string) []string {
		return runArgs(s, id, "--efo", "--batch-size", "25", "--exec", fleetHandler)
	}
	batches, want := runFleetScenario(t, s, out, args, 120*time.Second, efoEnv(t, "8s")...)
	byWorker := map[string]int{}
	for _, b := range batches {
		byWorker[b.worker] += len(b.records)
	}
	if byWorker["A"] == 0 || byWorker["C"] == 0 {
		t.Errorf("records handled per worker %v: A and C should have had a share", byWorker)
	}
	t.Logf("records handled per worker %v, %d batches, %d handlings of %d records", byWorker, len(batches), sum(byWorker), want)
	checkFleetLeaseTable(t, s)
}

// TestRunMixedFleetPollingAndEFO: A polls, B and C read with enhanced
// fan-out, on one lease table; B's leases move when it is killed, and
// leases are stolen between readers of both kinds, without a record lost
// or a key's order broken.
func TestRunMixedFleetPollingAndEFO(t *testing.T) {
	t.Parallel() // long, and mostly waiting on the local servers: it overlaps others on CI's two cores
	s := newE2EStack(t, 4)
	out := filepath.Join(t.TempDir(), "handled.jsonl")
	args := func(id string) []string {
		extra := []string{"--batch-size", "25", "--exec", fleetHandler}
		if id != "A" {
			extra = append([]string{"--efo"}, extra...)
		}
		return runArgs(s, id, extra...)
	}
	batches, want := runFleetScenario(t, s, out, args, 120*time.Second, efoEnv(t, "8s")...)
	byWorker := map[string]int{}
	for _, b := range batches {
		byWorker[b.worker] += len(b.records)
	}
	if byWorker["A"] == 0 || byWorker["B"]+byWorker["C"] == 0 {
		t.Errorf("records handled per worker %v: the polling and the fan-out workers should each have had a share", byWorker)
	}
	t.Logf("records handled per worker %v, %d batches, %d handlings of %d records", byWorker, len(batches), sum(byWorker), want)
	checkFleetLeaseTable(t, s)
}

// TestRunEFOFlags: the fan-out flags' usage errors.
func TestRunEFOFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--consumer-name", "c"}, "--consumer-name goes with --efo"},
		{[]string{"--efo", "--consumer-arn", "arn:aws:kinesis:us-east-1:123456789012:stream/s/consumer/c:1", "--stream", "t"}, "--consumer-arn names the consumer of one stream"},
		{[]string{"--efo", "--consumer-arn", "c"}, "invalid --consumer-arn"},
		{[]string{"--efo", "--consumer-arn", "arn:aws:kinesis:us-east-1:123456789012:stream/s/consumer/c:1", "--consumer-name", "c"}, "either --consumer-name or --consumer-arn"},
	} {
		var out, errOut bytes.Buffer
		f := cmdutil.NewFactory(&cmdutil.IOStreams{Out: &out, ErrOut: &errOut}, func(string) string { return "" })
		code := Run(context.Background(), f, append([]string{"run", "--print-config", "--app", "a", "--stream", "s", "--exec", "cat"}, tc.args...))
		if code != cmdutil.ExitUsage || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want usage error %q", tc.args, code, errOut.String(), tc.want)
		}
	}
}
