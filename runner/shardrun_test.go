package runner

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/runner/metrics"
)

// pidAlive reports whether a process runs. A killed process whose parent
// died too is a zombie until init reaps it, which inside a container may be
// never: that counts as dead.
func pidAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

// pidIn reads a pid file, 0 while it is not written yet.
func pidIn(path string) int {
	b, err := os.ReadFile(path)
	if err != nil || !strings.HasSuffix(string(b), "\n") {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// A lease taken by another worker stops its shard at once: the running
// handler's process group is killed and nothing more is checkpointed.
func TestLostLeaseKillsHandlerWithoutCheckpoint(t *testing.T) {
	s := newStack(t, 1)
	out := outFile(t)
	pidFile := out + ".pid"
	s.put(t, func(k string) string { return k }, keys("k", 10)...)
	// The handler starts a long sleep in the background of its group.
	cfg := s.config(t, "victim", out, "sh", "-c", `sleep 60 & echo $! > "$OUT.pid"; wait; cat >> "$OUT"`)
	cfg.Metrics = metrics.New()
	start(t, s, cfg)
	eventually(t, 20*time.Second, "the handler to start", func() bool { return pidIn(pidFile) != 0 })
	sleeper := pidIn(pidFile)

	held := leases(t, s)["shardId-000000000000"]
	if held.LeaseOwner != "victim" {
		t.Fatalf("lease owned by %q", held.LeaseOwner)
	}
	stolen, ok, err := leasecore.TakeLease(context.Background(), s.ddb, s.table, held, "thief")
	if err != nil || !ok {
		t.Fatalf("steal: ok=%v err=%v", ok, err)
	}
	// The thief keeps renewing, so that the victim cannot take it back.
	renewing, stopRenewing := context.WithCancel(context.Background())
	renewed := make(chan leasecore.Lease, 1)
	go func() {
		defer func() { renewed <- stolen }()
		for renewing.Err() == nil {
			time.Sleep(200 * time.Millisecond)
			if l, err := leasecore.RenewLease(renewing, s.ddb, s.table, stolen, "thief"); err == nil {
				stolen = l
			}
		}
	}()
	// The victim notices at its next renewal (every 475ms here).
	eventually(t, 5*time.Second, "the handler's process group to be killed", func() bool { return !pidAlive(sleeper) })
	time.Sleep(time.Second) // room for a wrong checkpoint to land
	stopRenewing()
	last := <-renewed
	after := leases(t, s)["shardId-000000000000"]
	if after.LeaseOwner != "thief" || after.Checkpoint != held.Checkpoint || after.LeaseCounter != last.LeaseCounter {
		t.Fatalf("after the steal the lease is owner %q counter %d checkpoint %v; want thief, %d (its own renewals), %v untouched",
			after.LeaseOwner, after.LeaseCounter, after.Checkpoint, last.LeaseCounter, held.Checkpoint)
	}
	if got := readHandled(t, out); len(got) != 0 {
		t.Fatalf("the killed handler's batch was written: %d records", len(got))
	}
	if c, _ := cfg.Metrics.Counts("shardId-000000000000"); c.Checkpoints != 0 {
		t.Fatal("a checkpoint was counted")
	}
}

// A split and then a merge, read by one worker: each key's records are
// handled in order across both reshards because children wait for their
// parents; finished parents end at SHARD_END with their children named, and
// the children's leases carry their parents.
func TestSplitAndMergeKeepKeyOrder(t *testing.T) {
	s := newStack(t, 2)
	out := outFile(t)
	cfg := s.config(t, "w1", out)
	cfg.BatchSize = 15
	start(t, s, cfg)
	round := 0
	produce := func(n int) {
		for range n {
			r := round
			s.put(t, func(k string) string { return fmt.Sprintf("%s:%d", k, r) }, keys("k", 30)...)
			round++
		}
	}
	produce(3)
	// Split shard 0 in the middle of its range: children 2 and 3.
	emulator.SplitShard(t, s.kin, s.stream, "shardId-000000000000", new(big.Int).Lsh(big.NewInt(1), 126))
	produce(3)
	// Merge shard 3 (upper half of shard 0's range) with shard 1: child 4.
	emulator.MergeShards(t, s.kin, s.stream, "shardId-000000000003", "shardId-000000000001")
	produce(3)
	eventually(t, 60*time.Second, "270 records", func() bool { return len(readHandled(t, out)) >= 270 })
	checkExactlyOnceInOrder(t, readHandled(t, out), 30, 9)

	eventually(t, 10*time.Second, "parents at SHARD_END", func() bool {
		ls := leases(t, s)
		for _, p := range []string{"shardId-000000000000", "shardId-000000000001", "shardId-000000000003"} {
			if l, ok := ls[p]; ok && !l.Checkpoint.IsShardEnd() {
				return false
			}
		}
		return true
	})
	ls := leases(t, s)
	want := map[string][]string{"shardId-000000000002": {"shardId-000000000000"}, "shardId-000000000003": {"shardId-000000000000"},
		"shardId-000000000004": {"shardId-000000000001", "shardId-000000000003"}}
	for child, parents := range want {
		l, ok := ls[child]
		if !ok {
			t.Fatalf("no lease for %s", child)
		}
		got := slices.Sorted(slices.Values(l.ParentShardIDs))
		if fmt.Sprint(got) != fmt.Sprint(parents) {
			t.Errorf("%s parentShardId %v, want %v", child, got, parents)
		}
	}
	if p, ok := ls["shardId-000000000000"]; ok && fmt.Sprint(slices.Sorted(slices.Values(p.ChildShardIDs))) != "[shardId-000000000002 shardId-000000000003]" {
		t.Errorf("shard 0 childShardIds %v", p.ChildShardIDs)
	}
}

// A graceful stop lets the running handler finish and checkpoints it; a
// handler still running when the grace ends is killed and not checkpointed.
// Either way every lease is released.
func TestGracefulStopFinishesOrKillsRunningHandlers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sleep string
		grace time.Duration
		done  bool
	}{
		{"finishes", "1", 10 * time.Second, true},
		{"grace expires", "60", 500 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack(t, 1)
			out := outFile(t)
			last := s.put(t, func(k string) string { return k }, keys("k", 5)...)
			cfg := s.config(t, "w1", out, "sh", "-c", `touch "$OUT.started"; sleep `+tc.sleep+`; cat >> "$OUT"`)
			cfg.ShutdownGrace = tc.grace
			r := start(t, s, cfg)
			eventually(t, 20*time.Second, "the handler to start", func() bool { _, err := os.Stat(out + ".started"); return err == nil })
			began := time.Now()
			if err := r.stop(t); err != nil {
				t.Fatalf("stop: %v", err)
			}
			took := time.Since(began)
			l := leases(t, s)["shardId-000000000000"]
			if l.LeaseOwner != "" {
				t.Errorf("lease still owned by %s", l.LeaseOwner)
			}
			got := readHandled(t, out)
			if tc.done {
				if len(got) != 5 || l.Checkpoint.SequenceNumber != last["k004"] && l.Checkpoint.SequenceNumber != maxSeq(last) {
					t.Fatalf("handled %d records, checkpoint %s; want all 5 and the last one checkpointed", len(got), l.Checkpoint.SequenceNumber)
				}
			} else {
				if len(got) != 0 || l.Checkpoint.SequenceNumber != leasecore.TRIM_HORIZON {
					t.Fatalf("handled %d records, checkpoint %s; want the killed batch neither written nor checkpointed", len(got), l.Checkpoint.SequenceNumber)
				}
				if took > 10*time.Second {
					t.Fatalf("stop took %s with a grace of %s", took, tc.grace)
				}
			}
		})
	}
}

func maxSeq(seqs map[string]string) string {
	best := ""
	for _, s := range seqs {
		if len(s) > len(best) || len(s) == len(best) && s > best {
			best = s
		}
	}
	return best
}

// --max-parallel 1 runs one handler at a time across all shards.
func TestMaxParallelBoundsHandlersAcrossShards(t *testing.T) {
	s := newStack(t, 4)
	out := outFile(t)
	lock := filepath.Join(t.TempDir(), "lock")
	s.put(t, func(k string) string { return k }, keys("k", 40)...)
	cfg := s.config(t, "w1", out, "sh", "-c", `mkdir "$LOCK" 2>/dev/null || echo OVERLAP >> "$OUT.overlap"; sleep 0.05; cat >> "$OUT"; rmdir "$LOCK"`)
	cfg.Handler.Env = append(cfg.Handler.Env, "LOCK="+lock)
	cfg.MaxParallel, cfg.BatchSize = 1, 5
	r := start(t, s, cfg)
	eventually(t, 30*time.Second, "40 records", func() bool { return len(readHandled(t, out)) >= 40 })
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(out + ".overlap"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("handlers overlapped: %s", b)
	}
}
