package leasecore

import (
	"strings"
	"testing"
	"time"
)

// TestRenewalsSurviveThrottling puts a reverse proxy in front of dynalite
// that answers 20% of all DynamoDB calls with
// ProvisionedThroughputExceededException once two workers have balanced. For
// six failover times nobody may lose a lease (each renewal is retried within
// its round), the leases stay where they are, and the throttles and retries
// show in the stats and the logs.
func TestRenewalsSurviveThrottling(t *testing.T) {
	_, table := newLeaseTable(t, 6)
	proxy := newFaultProxy(t, 0.2, 42)
	cfg := fastConfig
	cfg.MaxLeasesToStealAtOneTime = 3
	a := startWorker(t, proxy.client(), table, "a", cfg)
	waitFor(t, time.Second, "a holds 6", func() bool { return a.held() == 6 })
	b := startWorker(t, proxy.client(), table, "b", cfg)
	waitFor(t, 2*time.Second, "3/3", func() bool { return a.held() == 3 && b.held() == 3 })
	lostBefore := a.c.Stats().Lost + b.c.Stats().Lost

	proxy.throttling(true)
	requestsBefore := proxy.Total()
	time.Sleep(6 * cfg.FailoverTime)
	proxy.throttling(false)

	sa, sb := a.c.Stats(), b.c.Stats()
	if lost := sa.Lost + sb.Lost - lostBefore; lost != 0 {
		t.Fatalf("%d leases lost under 20%% throttling (a %+v, b %+v)", lost, sa, sb)
	}
	if a.held() != 3 || b.held() != 3 || sb.Stolen != 3 || sa.Taken != 6 {
		t.Fatalf("leases moved under throttling: a %d b %d, stats a %+v b %+v", a.held(), b.held(), sa, sb)
	}
	throttled := proxy.Injected.Load()
	share := float64(throttled) / float64(proxy.Total()-requestsBefore)
	if share < 0.15 || share > 0.25 {
		t.Fatalf("proxy throttled %.0f%% of calls, want about 20%%", 100*share)
	}
	if sa.Throttled+sb.Throttled != throttled {
		t.Errorf("workers counted %d throttles, the proxy sent %d", sa.Throttled+sb.Throttled, throttled)
	}
	if sa.Retries == 0 || sb.Retries == 0 {
		t.Fatalf("no retries counted: a %d b %d", sa.Retries, sb.Retries)
	}
	if sa.Renewals < 3*16 || sb.Renewals < 3*16 {
		t.Fatalf("renewals a %d b %d, want about 3 leases × 19 rounds each", sa.Renewals, sb.Renewals)
	}
	logs := a.logs.String()
	if !strings.Contains(logs, "retrying lease renewal") || !strings.Contains(logs, "ProvisionedThroughputExceeded") ||
		!strings.Contains(logs, "level=INFO msg=\"DynamoDB throttled lease calls; retried\"") {
		t.Fatalf("throttling and retries are not in the log:\n%s", logs)
	}
	t.Logf("throttled %d of %d calls; a: %d renewals, %d retries, %d failed rounds; b: %d renewals, %d retries, %d failed rounds",
		throttled, proxy.Total()-requestsBefore, sa.Renewals, sa.Retries, sa.RenewFailures, sb.Renewals, sb.Retries, sb.RenewFailures)
}

// TestRenewalRetryWaitFollowsTimeLeft pins the rule that keeps a throttled
// table's units for the leases nearest expiry (renewRetryWait): a retry
// waits a sixteenth to an eighth of the time its lease has left, so a lease
// renewed a moment ago retries least often. The earlier rule, the usual
// backoff capped at an eighth of the time left, let a fresh lease retry
// within about 100 ms of its first throttle, and fails here.
func TestRenewalRetryWaitFollowsTimeLeft(t *testing.T) {
	c := &Coordinator{cfg: Config{FailoverTime: 10 * time.Second}.WithDefaults()}
	now := time.Unix(1_800_000_000, 0)
	for _, left := range []time.Duration{9 * time.Second, 6 * time.Second, time.Second, 80 * time.Millisecond} {
		hl := &heldLease{renewedAt: now.Add(left - 10*time.Second)}
		lo, hi := left/16, left/8
		for range 500 {
			if w := c.renewRetryWait(hl, now); w < lo || w > hi {
				t.Fatalf("with %s left a renewal retry waits %s, want between %s and %s", left, w, lo, hi)
			}
		}
	}
	// At or past the deadline the renewer drops the lease rather than
	// retrying; the wait only has to stay positive.
	hl := &heldLease{renewedAt: now.Add(-11 * time.Second)}
	if w := c.renewRetryWait(hl, now); w <= 0 || w > time.Millisecond {
		t.Fatalf("past the deadline a retry waits %s, want (0, 1ms]", w)
	}
}
