package leasecore

import (
	"math"
	"sync"
	"time"
)

// leaseStats turns the bytes read from each held lease's shard into the
// throughputKBps a KCL 3.x renewal writes, as the KCL's LeaseStatsRecorder:
//
//   - every RecordBytes is kept with its time;
//   - at a renewal, entries as old as the window (the renew interval,
//     LeaseStatsRecorder's renewerFrequencyInMillis) are dropped, the rest
//     summed, and sum / 1024 / window-in-seconds fed into an exponential
//     moving average with alpha 0.5 (ExponentialMovingAverage: the first
//     value is taken as is);
//   - the average is rounded to 6 decimals, half up (DynamoDBLeaseRenewer,
//     DEFAULT_THROUGHPUT_DIGIT_AFTER_DECIMAL);
//   - a lease for which nothing was ever recorded gets nil: the renewal
//     writes no throughputKBps (getThroughputKBps returns null). Once
//     something was recorded, a window without bytes writes a decaying
//     value, not nothing;
//   - a lease gained with a throughputKBps on its item starts with that
//     many KB recorded at the gain (DynamoDBLeaseRenewer.addLeasesToRenew);
//   - dropping the lease drops its stats (dropLeaseStats).
type leaseStats struct {
	window time.Duration
	mu     sync.Mutex
	leases map[string]*leaseStat
}

type leaseStat struct {
	entries []statEntry
	ema     float64
	emaSet  bool
}

type statEntry struct {
	at    time.Time
	bytes int64
}

const (
	statsAlpha    = 0.5 // LeaseStatsRecorder.DEFAULT_ALPHA
	bytesPerKB    = 1024
	tputDecimals  = 6
	tputRoundUnit = 1e6 // 10^tputDecimals
)

func newLeaseStats(window time.Duration) *leaseStats {
	return &leaseStats{window: window, leases: map[string]*leaseStat{}}
}

func (s *leaseStats) record(key string, bytes int64, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.leases[key]
	if st == nil {
		st = &leaseStat{}
		s.leases[key] = st
	}
	st.entries = append(st.entries, statEntry{at: now, bytes: bytes})
}

// seed is addLeasesToRenew's record of a gained lease's last throughput.
func (s *leaseStats) seed(key string, kbps *float64, now time.Time) {
	if kbps != nil {
		s.record(key, int64(math.Round(*kbps*bytesPerKB)), now)
	}
}

// throughput is getThroughputKBps, rounded as the renewer rounds it.
func (s *leaseStats) throughput(key string, now time.Time) *float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.leases[key]
	if st == nil {
		return nil
	}
	i := 0
	for i < len(st.entries) && now.Sub(st.entries[i].at) >= s.window {
		i++
	}
	st.entries = st.entries[i:]
	var sum int64
	for _, e := range st.entries {
		if e.at.After(now) {
			break
		}
		sum += e.bytes
	}
	v := float64(sum) / bytesPerKB / s.window.Seconds()
	if st.emaSet {
		v = statsAlpha*v + (1-statsAlpha)*st.ema
	}
	st.ema, st.emaSet = v, true
	// BigDecimal.setScale(6, HALF_UP) on a non-negative value.
	r := math.Floor(v*tputRoundUnit+0.5) / tputRoundUnit
	return &r
}

func (s *leaseStats) drop(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.leases, key)
}
