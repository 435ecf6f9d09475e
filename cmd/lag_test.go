package cmd

import (
	"context"
	"strings"
	"testing"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// `checkpoint diff` reads every leased open shard exactly once: one
// GetShardIterator naming it and one GetRecords, counted by a recording
// proxy in front of kinesis-local, with the concurrency chosen
// automatically and with --concurrency, whose bound the proxy sees held.
func TestCheckpointDiffReadsEachShardOnce(t *testing.T) {
	const shards = 24
	s := emulator.NewStreamAndTable(t, shards)
	seqs := putOnePerShard(t, s.Kinesis, s.Stream, shards)
	for id, seq := range seqs {
		l := leasecore.Lease{LeaseKey: id, LeaseOwner: "worker-a", Checkpoint: leasecore.SequenceNumber{SequenceNumber: seq}}
		if _, err := leasecore.CreateLease(context.Background(), s.DynamoDB, s.Table, l); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name    string
		args    []string
		maxConc int
	}{
		{"automatic", nil, 8},
		{"--concurrency 3", []string{"--concurrency", "3"}, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec, err := emulator.NewRecorder(emulator.KinesisEndpoint(t), emulator.NewCallLog(t.TempDir(), nil, nil))
			if err != nil {
				t.Fatal(err)
			}
			defer rec.Close()
			f, out, errOut := testFactory(t, false, map[string]string{"AWS_ENDPOINT_URL_KINESIS": rec.URL})
			args := append([]string{"checkpoint", "diff", "--app", s.Table, "--stream", s.Stream, "-o", "csv"}, c.args...)
			if code := Run(context.Background(), f, args); code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			iters := rec.ShardCounts("GetShardIterator")
			for id := range seqs {
				if iters[id] != 1 {
					t.Errorf("shard %s: %d GetShardIterator calls, want 1", id, iters[id])
				}
			}
			if len(iters) != shards {
				t.Errorf("GetShardIterator named %d shards, want %d: %v", len(iters), shards, iters)
			}
			if n := rec.Count("GetRecords"); n != shards {
				t.Errorf("%d GetRecords calls for %d shards, want one each", n, shards)
			}
			// ListShards is one call, before the probes: the peak is theirs.
			if m := rec.MaxInFlight(); m > c.maxConc || m < 2 {
				t.Errorf("%d Kinesis calls in flight at most, want 2 to %d", m, c.maxConc)
			}
			if got := strings.Count(out.String(), "\n"); got != shards+1 {
				t.Errorf("%d CSV lines, want a header and %d rows:\n%s", got, shards, out)
			}
		})
	}
}

// checkpoint diff on a single-stream table without --stream is a usage
// error naming the flag. inspect says it with a sentinel
// (inspect.ErrStreamRequired) that names no flag; these are the bytes the
// text inspect returned used to give.
func TestCheckpointDiffNeedsStream(t *testing.T) {
	s := emulator.NewStreamAndTable(t, 1)
	l := leasecore.Lease{LeaseKey: "shardId-000000000000", Checkpoint: leasecore.SequenceNumber{SequenceNumber: leasecore.TRIM_HORIZON}}
	if _, err := leasecore.CreateLease(context.Background(), s.DynamoDB, s.Table, l); err != nil {
		t.Fatal(err)
	}
	f, out, errOut := testFactory(t, false, map[string]string{"AWS_ENDPOINT_URL_KINESIS": emulator.KinesisEndpoint(t)})
	code := Run(context.Background(), f, []string{"checkpoint", "diff", "--app", s.Table})
	const want = "kcltool: error: --stream is required for a single-stream lease table (or set KCLTOOL_STREAM)\n" +
		"kcltool: hint: see 'kcltool --help' or 'kcltool COMMAND --help'\n"
	if code != 2 || out.Len() != 0 || errOut.String() != want {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 2, no stdout, stderr %q", code, out, errOut, want)
	}
}
