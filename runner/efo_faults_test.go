package runner

import (
	"crypto/md5"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/runner/metrics"
	"github.com/kcltool/kcltool/runner/retrieval"
)

// keysOfShard returns n partition keys that a two-shard stream puts in
// shard 0 (first) or 1: Kinesis hashes a key with MD5, and each shard of
// two holds half of the 128-bit range.
func keysOfShard(prefix string, shard, n int) []string {
	half := new(big.Int).Lsh(big.NewInt(1), 127)
	var out []string
	for i := 0; len(out) < n; i++ {
		k := fmt.Sprintf("%s%04d", prefix, i)
		sum := md5.Sum([]byte(k))
		if (new(big.Int).SetBytes(sum[:]).Cmp(half) >= 0) == (shard == 1) {
			out = append(out, k)
		}
	}
	return out
}

// TestFanOutSubscribeErrorsBackOffAndRetry: SubscribeToShard answered
// LimitExceeded three times, then ResourceInUse twice (the shard's previous
// owner still subscribed), for one shard, is retried with backoff: that
// shard keeps its lease and delivers every record once and in order, the
// other shard is read all along, and the failures show at once in a warning
// and in the read-failure metrics.
func TestFanOutSubscribeErrorsBackOffAndRetry(t *testing.T) {
	s := newStack(t, 2)
	out := outFile(t)
	cfg := s.config(t, "A", out)
	var logs *logBuffer
	cfg.Log, logs = recordedLogger(t, "A")
	cfg.Metrics = metrics.New()
	cfg.FanOut = fanOut(t, 0)
	proxy := emulator.EFOProxyOf(t)
	const failing, other = "shardId-000000000000", "shardId-000000000001"
	proxy.FailSubscriptions(s.stream, failing, "LimitExceededException", "LimitExceededException", "LimitExceededException",
		"ResourceInUseException", "ResourceInUseException")
	k0, k1 := keysOfShard("f", 0, 60), keysOfShard("o", 1, 60)
	id := func(k string) string { return k }
	r := start(t, s, cfg)

	subscribedTo := func(shard string) int64 {
		if st, ok := countsOf(r.w, shard); ok {
			return st.Subscriptions
		}
		return 0
	}
	handledOf := func(shard string) []string {
		var ks []string
		for _, h := range readHandled(t, out) {
			if h.ShardID == shard {
				ks = append(ks, h.text())
			}
		}
		return ks
	}
	// Records for both shards, five each a second apart, while the failing
	// shard backs off (about 9 to 16 s for the five refusals): the other
	// shard's records are handled within a few seconds of their put all
	// along.
	type round struct {
		at   time.Time
		upTo int // the other shard's records put so far
	}
	var rounds []round
	pausedRounds := 0
	for i := range 12 {
		s.put(t, id, k0[i*5:i*5+5]...)
		s.put(t, id, k1[i*5:i*5+5]...)
		rounds = append(rounds, round{time.Now(), i*5 + 5})
		time.Sleep(time.Second)
		if subscribedTo(failing) != 0 {
			continue
		}
		pausedRounds++
		got := len(handledOf(other))
		for _, rd := range rounds {
			if time.Since(rd.at) > 6*time.Second && got < rd.upTo {
				t.Fatalf("while %s backs off, %s has handled %d records, though %d were put over 6s ago: it paused", failing, other, got, rd.upTo)
			}
		}
	}
	t.Logf("%s had no subscription for %d rounds of a second; faults left %d", failing, pausedRounds, proxy.SubscribeFaultsLeft())
	if pausedRounds < 3 {
		t.Errorf("%s subscribed after %d rounds: the five refusals cannot have been backed off", failing, pausedRounds)
	}
	eventually(t, 90*time.Second, "every record of both shards", func() bool {
		return len(handledOf(failing)) >= 60 && len(handledOf(other)) >= 60
	})
	time.Sleep(2 * time.Second) // room for a repeat to show
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	for shard, want := range map[string][]string{failing: k0, other: k1} {
		got := handledOf(shard)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s handled %d records %v, want each of %d once, in order", shard, len(got), got, len(want))
		}
	}
	if left := proxy.SubscribeFaultsLeft(); left != 0 {
		t.Errorf("%d injected refusals never asked for", left)
	}
	if st, _ := countsOf(r.w, failing); st.ReadFailures < 5 {
		t.Errorf("%s counted %d read failures, want at least the 5 refusals", failing, st.ReadFailures)
	}
	if st, _ := countsOf(r.w, other); st.ReadFailures != 0 {
		t.Errorf("%s counted %d read failures, want none", other, st.ReadFailures)
	}
	log := logs.String()
	warns := 0
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "subscriptions to the shard are") {
			warns++
			if !strings.Contains(line, "LimitExceededException") || !strings.Contains(line, "attempts=1 ") {
				t.Errorf("the first warning is not about the first refusal: %s", line)
			}
		}
	}
	if warns != 1 {
		t.Errorf("%d warnings about the failing subscriptions, want 1 at once (then one per %s)", warns, retrieval.FailingWarnEvery)
	}
	if strings.Contains(log, "shard processing failed") {
		t.Error("a refused subscription failed the shard's processing: it must be retried by the reader")
	}
	if !strings.Contains(log, "subscriptions to the shard recovered") {
		t.Error("no info line saying the subscriptions recovered")
	}
}
