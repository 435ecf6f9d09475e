package fleetsim

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/coordination/assignment"
	"github.com/kcltool/kcltool/internal/clock"
	"github.com/kcltool/kcltool/leasecore"
)

// LeadKCLTool: the production leader, coordination.LeaderLock and
// assignment.Manager, driven as the runner drives them: a Poll every poll
// interval, an assignment run every AssignmentInterval while leading
// (Reset when leadership is lost, the lock released when the Manager
// gives up), and the shard sync's audit, a full scan every two minutes,
// on the leader alone.
const LeadKCLTool Lead = "kcltool"

// KCLToolFailover is kcltool's failover time, from which the leader's
// settings derive: the lock's leaseDuration (2 × failover) and the run
// interval (2 × failover), as the KCL's.
const KCLToolFailover = 10 * time.Second

// AuditInterval is the shard sync's audit on the leader (PeriodicShardSyncManager's 2 minutes).
const AuditInterval = 2 * time.Minute

type kcltoolLeader struct {
	lock   *coordination.LeaderLock
	mgr    *assignment.Manager
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	written int64
	runs    int64
	dead    bool
}

func (k *kcltoolLeader) kill() {
	k.mu.Lock()
	k.dead = true
	k.mu.Unlock()
	k.cancel()
	k.wg.Wait()
}

func (k *kcltoolLeader) moves() int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.written
}

func (k *kcltoolLeader) leading() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return !k.dead && k.lock.IsLeader()
}

func (k *kcltoolLeader) rounds() int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.runs
}

// kcltoolState is what Detect finds on the simulated table: a new 3.5
// application, everything in the lease table.
func kcltoolState() coordination.State {
	return coordination.State{Assignment: leasecore.AssignByLeader, ReportMetrics: true, Index: "ACTIVE",
		ClientVersion: coordination.ClientVersion3X, Layout: coordination.LayoutLeaseTable}
}

func (f *Fleet3) startLeaderSide(ctx context.Context, cancel context.CancelFunc, id string) leaderSide {
	if f.Lead != LeadKCLTool {
		panic("fleetsim: no such lead: " + string(f.Lead))
	}
	t := coordination.Tables{Lease: Table}
	log := slog.New(slog.DiscardHandler)
	k := &kcltoolLeader{
		lock:   coordination.NewLeaderLock(f.Model, t, coordination.LeaderLockConfig{Owner: id, LeaseDuration: 2 * KCLToolFailover, ContendPeriod: f.ContendPeriod}, f.Clock, log),
		mgr:    assignment.NewManager(f.Model, t, f.AssignConfig, f.Clock, log),
		cancel: cancel,
	}
	st := kcltoolState()
	poll := KCLToolFailover / 2
	if p, ok := any(k.lock).(interface{ PollInterval() time.Duration }); ok && p.PollInterval() > 0 {
		poll = p.PollInterval()
	}
	interval := f.AssignConfig.AssignmentInterval
	if interval <= 0 {
		interval = 2 * KCLToolFailover
	}
	became := make(chan struct{}, 1)
	k.wg.Add(3)
	go func() { // the election
		defer k.wg.Done()
		was := false
		for {
			leader, _ := k.lock.Poll(ctx, st)
			if was && !leader {
				k.mgr.Reset()
			}
			if leader && !was {
				select {
				case became <- struct{}{}:
				default:
				}
			}
			was = leader
			wait := poll
			if n, ok := any(k.lock).(interface{ NextPoll() time.Duration }); ok {
				wait = n.NextPoll()
			}
			if clock.Sleep(ctx, f.Clock, wait) != nil {
				return
			}
		}
	}()
	go func() { // the assignment runs: at once on taking the lock, then as Result.NextRunIn says
		defer k.wg.Done()
		wait := interval
		for {
			t := f.Clock.NewTimer(wait)
			took := false
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C():
			case <-became:
				t.Stop()
				took = true
			}
			wait = interval
			if !k.lock.IsLeader() {
				continue
			}
			if from, at := k.lock.TookOverFrom(); took && from != "" {
				k.mgr.Departed(from, at) // as the runner does
			}
			res, err := k.mgr.RunOnce(ctx, st)
			k.mu.Lock()
			k.runs++
			for _, m := range res.Moves {
				if m.Err == nil {
					k.written++
				}
			}
			k.mu.Unlock()
			if res.NextRunIn > 0 {
				wait = res.NextRunIn
			}
			if err != nil && errors.Is(err, assignment.ErrGiveUpLeadership) {
				_ = k.lock.Release(ctx, st)
				k.mgr.Reset()
			}
		}
	}()
	go func() { // the leader's audit
		defer k.wg.Done()
		for clock.Sleep(ctx, f.Clock, AuditInterval) == nil {
			if k.lock.IsLeader() {
				f.pacedScan(ctx, f.auditRate())
			}
		}
	}()
	return k
}

// pacedScan reads the whole lease table eventually consistently, at most
// rate read units a second: pages of about rate units (Limit), a second
// apart.
func (f *Fleet3) pacedScan(ctx context.Context, rate float64) {
	if rate <= 0 {
		rate = 1e6 // unpaced, as the KCL
	}
	limit := int32(max(rate*2*4096/float64(leaseItemBytes), 1)) // eventually consistent: half a unit per 4 KB
	var start map[string]types.AttributeValue
	for {
		page, err := f.Model.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(Table), ExclusiveStartKey: start, Limit: aws.Int32(limit)})
		if err != nil || len(page.LastEvaluatedKey) == 0 {
			return
		}
		start = page.LastEvaluatedKey
		if clock.Sleep(ctx, f.Clock, time.Second) != nil {
			return
		}
	}
}

// leaseItemBytes is about the size of a simulated 3.x lease item.
const leaseItemBytes = 330

// auditRate is the audit's pacing: the Manager's scan rate.
func (f *Fleet3) auditRate() float64 {
	return f.AssignConfig.WithDefaults().ScanRate
}

// release is the runner's graceful stop of the leader side: the run in
// flight is dropped (the next leader redoes it) and the lock deleted.
func (k *kcltoolLeader) release(ctx context.Context) {
	k.kill()
	_ = k.lock.Release(ctx, kcltoolState())
}
