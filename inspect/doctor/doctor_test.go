package doctor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/leasecore"
)

// fleet creates leases 0..n-1 owned as given ("" for none).
func (r *rig) fleet(owners ...string) {
	for i, o := range owners {
		r.create(leasecore.Lease{LeaseKey: shard(i), LeaseOwner: o, LeaseCounter: 10})
	}
}

// renewAll renews every owned lease except those listed.
func (r *rig) renewAll(except ...string) {
	for key, l := range r.leases {
		if l.LeaseOwner == "" || contains(except, key) {
			continue
		}
		r.renew(key)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestDoctorHealthyFleetHasOnlyInfo: two workers renewing everything, a
// checkpoint moving: nothing to warn about, and the reads are one Scan per
// failover time.
func TestDoctorHealthyFleetHasOnlyInfo(t *testing.T) {
	r := newRig(t, time.Second, 5*time.Second)
	r.fleet("w1", "w1", "w2", "w2")
	rep := r.run(func(i int) {
		if i > 0 {
			r.renewAll()
		}
	})
	if w := rep.AtLeast(SeverityWarn); len(w) > 0 {
		t.Fatalf("healthy fleet has warnings:\n%s", dump(rep))
	}
	want(t, rep, FindTableCapacity, SeverityInfo, "on demand")
	want(t, rep, FindCloudWatchSkipped, SeverityInfo, "--no-cloudwatch")
	want(t, rep, FindChecksSkipped, SeverityInfo, "stream checks")
	if rep.Reads != 6 || rep.Cost.Scans != 6 || rep.Cost.Pages != 6 || rep.Cost.DescribeTable != 1 {
		t.Errorf("reads %d, cost %+v; want 6 reads of one page each and one DescribeTable", rep.Reads, rep.Cost)
	}
	if rep.Window != 5*time.Second || rep.Leases != 4 || rep.Workers != 2 {
		t.Errorf("window %s, %d leases, %d workers", rep.Window, rep.Leases, rep.Workers)
	}
	if rep.Cost.ReadCapacityUnits <= 0 {
		t.Errorf("consumed read capacity not reported: %+v", rep.Cost)
	}
}

// TestDoctorChurn: a lease expires under a live owner, is taken by the
// other worker, expires there and comes back: churn and two struggling
// workers, with throttling named as the likely cause.
func TestDoctorChurn(t *testing.T) {
	for _, withCW := range []bool{false, true} {
		t.Run(map[bool]string{false: "no cloudwatch", true: "throttling in cloudwatch"}[withCW], func(t *testing.T) {
			r := newRig(t, time.Second, 6*time.Second)
			if withCW {
				r.withCloudWatch()
				r.cw.Add("AWS/DynamoDB", "ThrottledRequests", map[string]string{"TableName": r.table, "Operation": "UpdateItem"}, r.clock.Now(), 37)
			}
			r.fleet("w1", "w1", "w2", "w2")
			l0 := shard(0)
			rep := r.run(func(i int) {
				switch i {
				case 0:
				case 1, 4: // the owner's renewals of lease 0 fail
					r.renewAll(l0)
				case 2:
					r.renewAll(l0)
					r.take(l0, "w2")
				case 5:
					r.renewAll(l0)
					r.take(l0, "w1")
				default:
					r.renewAll()
				}
			})
			f := want(t, rep, FindLeaseChurn, SeverityWarn, "1 of 4 leases changed owner 2 times", "1 bounced back")
			if f.Evidence.Values["lost"] != 2 || !contains(f.Evidence.Shards, l0) {
				t.Errorf("churn evidence %+v", f.Evidence)
			}
			if !strings.Contains(f.Evidence.Lines[0], "w1 → w2 → w1") {
				t.Errorf("churn path: %v", f.Evidence.Lines)
			}
			if !strings.Contains(f.Cause, "throttl") {
				t.Errorf("churn cause does not name throttling: %s", f.Cause)
			}
			s := want(t, rep, FindStrugglingWorker, SeverityWarn, "2 workers alive but let 1 lease expire")
			if len(s.Evidence.Workers) != 2 {
				t.Errorf("struggling workers %v", s.Evidence.Workers)
			}
			absent(t, rep, FindDeadWorker)
			if withCW {
				if !strings.Contains(f.Cause, "throttled the table 37 times") {
					t.Errorf("cause does not cite CloudWatch: %s", f.Cause)
				}
				want(t, rep, FindTableThrottled, SeverityCritical, "lease table throttled 37 times in 5m0s (UpdateItem 37) while 2 workers renew 4 leases")
			}
		})
	}
}

// TestDoctorDeadWorker: a worker stops renewing. Its leases stranded past
// the failover time plus two taker intervals are critical; taken over in
// time they are a warning, and the takeover is no churn.
func TestDoctorDeadWorker(t *testing.T) {
	t.Run("stranded", func(t *testing.T) {
		r := newRig(t, time.Second, 6*time.Second)
		r.fleet("w1", "w1", "w2", "w2")
		rep := r.run(func(i int) {
			if i > 0 {
				r.renewAll(shard(2), shard(3))
			}
		})
		f := want(t, rep, FindDeadWorker, SeverityCritical, "1 worker renewed no lease", "w2", "2 leases still held")
		if !contains(f.Evidence.Shards, shard(2)) || f.Evidence.Values["liveWorkers"] != 1 {
			t.Errorf("evidence %+v", f.Evidence)
		}
		absent(t, rep, FindLeaseChurn, FindStrugglingWorker)
	})
	t.Run("taken over", func(t *testing.T) {
		r := newRig(t, time.Second, 4*time.Second)
		r.fleet("w1", "w1", "w2", "w2")
		rep := r.run(func(i int) {
			switch {
			case i == 2:
				r.renewAll(shard(2), shard(3))
				r.take(shard(2), "w1")
				r.take(shard(3), "w1")
			case i > 0:
				r.renewAll(shard(2), shard(3))
			}
		})
		f := want(t, rep, FindDeadWorker, SeverityWarn, "w2")
		if !strings.Contains(strings.Join(f.Evidence.Lines, "\n"), "taken over: "+shard(2)+" → w1") {
			t.Errorf("takeover not named: %v", f.Evidence.Lines)
		}
		absent(t, rep, FindLeaseChurn)
	})
}

// TestDoctorUnassigned: unowned leases with nobody alive to take them (the
// one worker seen is dead) are critical; with a live worker that does not
// take them, a warning. With no worker seen at all, no-workers says it
// (doctor_noworkers_test.go).
func TestDoctorUnassigned(t *testing.T) {
	r := newRig(t, time.Second, 3*time.Second)
	r.fleet("w-dead", "", "")
	rep := r.run(func(int) {})
	want(t, rep, FindUnassigned, SeverityCritical, "2 leases unowned", "no live worker")

	r = newRig(t, time.Second, 3*time.Second)
	r.fleet("w1", "", "")
	rep = r.run(func(i int) {
		if i > 0 {
			r.renewAll()
		}
	})
	want(t, rep, FindUnassigned, SeverityWarn, "2 leases unowned", "1 worker is live")
}

// TestDoctorImbalance: 4 leases against 1, unchanged for longer than a
// taker interval.
func TestDoctorImbalance(t *testing.T) {
	r := newRig(t, time.Second, 3*time.Second)
	r.fleet("w1", "w1", "w1", "w1", "w2")
	rep := r.run(func(i int) {
		if i > 0 {
			r.renewAll()
		}
	})
	f := want(t, rep, FindImbalance, SeverityWarn, "5 leases over 2 workers: between 1 and 4 each, fair share 3")
	if f.Evidence.Values["max"] != 4 {
		t.Errorf("evidence %+v", f.Evidence.Values)
	}
}

// TestDoctorWindowShorterThanFailover is refused: expiry needs two reads a
// failover time apart.
func TestDoctorWindowShorterThanFailover(t *testing.T) {
	r := newRig(t, 2*time.Second, time.Second)
	_, err := New(context.Background(), r.apis(), r.options())
	if err == nil || !strings.Contains(err.Error(), "shorter than the failover time") {
		t.Fatalf("err %v", err)
	}
}

// TestDoctorMissingTableFails before any sampling.
func TestDoctorMissingTableFails(t *testing.T) {
	r := newRig(t, time.Second, time.Second)
	o := r.options()
	o.Table = r.table + "-nope"
	if _, err := New(context.Background(), r.apis(), o); err == nil || !strings.Contains(err.Error(), "ResourceNotFound") {
		t.Fatalf("err %v", err)
	}
}

// TestDoctorWatchSlidesTheWindow: a first report at once, from the first
// read and marked Partial; after the first full window every further read
// gives a report on the last window, still one Scan per failover time, and
// CloudWatch is read once a minute.
func TestDoctorWatchSlidesTheWindow(t *testing.T) {
	r := newRig(t, time.Second, 2*time.Second).withCloudWatch()
	r.fleet("w1", "w2")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, err := New(ctx, r.apis(), r.options())
	if err != nil {
		t.Fatal(err)
	}
	var reports []*Report
	done := make(chan error, 1)
	go func() {
		done <- d.Watch(ctx, func(rep *Report) error {
			reports = append(reports, rep)
			if len(reports) == 4 {
				cancel()
			}
			return nil
		})
	}()
	start := r.clock.Now()
	for {
		if err := r.clock.WaitTimers(ctx, 1); err != nil {
			break
		}
		r.renewAll()
		r.clock.Advance(time.Second)
	}
	if err := <-done; err != context.Canceled {
		t.Fatalf("watch ended with %v", err)
	}
	if len(reports) != 4 {
		t.Fatalf("%d reports", len(reports))
	}
	if first := reports[0]; !first.Partial || first.Reads != 1 || first.Window != 0 || !first.Ended.Equal(start) {
		t.Errorf("first report: partial %v, %d reads over %s, ended %s; want a partial one from the first read at %s",
			first.Partial, first.Reads, first.Window, first.Ended, start)
	}
	scans := reports[0].Cost.Scans
	for i, rep := range reports[1:] {
		if rep.Partial || rep.Reads != 3 || rep.Window != 2*time.Second {
			t.Errorf("report %d: partial %v, %d reads over %s, want a full one: 3 over 2s", i+1, rep.Partial, rep.Reads, rep.Window)
		}
		if i > 0 && !rep.Started.Equal(reports[i].Started.Add(time.Second)) {
			t.Errorf("report %d window starts %s, want one failover after %s", i+1, rep.Started, reports[i].Started)
		}
		scans += rep.Cost.Scans
	}
	if scans != 5 {
		t.Errorf("%d scans for 4 reports, want 5 (3 for the first window, the first report's among them, 1 per report after)", scans)
	}
	// CloudWatch has one-minute resolution: read once a minute, not per report.
	if n := r.cw.Calls("GetMetricData"); n != 1 {
		t.Errorf("%d GetMetricData requests in 3s of watching, want 1", n)
	}
	for _, rep := range reports {
		find(t, rep, FindKCLMetricsAbsent) // every report still has the CloudWatch findings
	}
}
