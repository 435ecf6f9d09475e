package kcl3fleet

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/clock"
)

// The leader election as every Java 3.x worker runs it, for LeaderConfig.
// JavaSchedule (the fleet simulation counts its reads and writes):
// DynamoDBLockBasedLeaderDecider.isLeader (leader/DynamoDBLockBasedLeaderDecider.java,
// v3.5.1 lines 111-170) on lock client 1.4.0, called by the Scheduler's
// loop every shardConsumerDispatchPollIntervalMillis (1 s,
// CoordinatorConfig line 79; Scheduler.runProcessLoop line 681), by each
// LeaseAssignmentManager run and by the PeriodicShardSyncManager audit.
//
//   - A worker that last found itself not leader does not look again for
//     heartbeatPeriodMillis (30 s): no read.
//   - The holder reads nothing: the lock client's getLock answers its own
//     lock from memory (AmazonDynamoDBLockClient.getLock lines 972-977).
//   - Anyone else reads the item (getLockFromDynamoDB: a consistent GetItem).
//     Absent, it calls tryAcquireLock, which reads it again (acquireLock
//     line 467) and Puts it if still absent.
//   - Present and someone else's, lock client 1.4.0 never reports it
//     expired: createLockItem starts the item's expiry clock at the read
//     (lines 1036-1047), so isLeader never tries to take it, and a leader
//     killed holding the lock is never replaced (KCL issue #1803). With
//     LeaderConfig.StaleTakeover the port instead does what the issue
//     describes and lock client commit 56fc9a1 makes possible: the version
//     is timed from the moment this worker first saw it, and once it has
//     stayed unchanged for the item's own leaseDuration, tryAcquireLock
//     reads the item and Puts it conditioned on that version
//     (upsertAndMonitorExpiredLock, PK_EXISTS_AND_RVN_IS_THE_SAME_CONDITION).

// lockObservation is the version a contender saw and when it first saw it.
type lockObservation struct {
	version  string
	first    time.Time
	duration time.Duration
}

// deciderState is isLeader's memory (lastCheckTimeInMillis,
// lastIsLeaderResult) and the contender's observation.
type deciderState struct {
	lastCheck  time.Time
	lastResult bool
	obs        lockObservation
}

// LockReads counts the lock reads (GetItem) this worker's decider made.
func (l *Leader) LockReads() int64 { return l.lockReads.Load() }

// IsLeader is DynamoDBLockBasedLeaderDecider.isLeader on lock client
// 1.4.0 (see above); with JavaSchedule false it is TakeLock.
func (l *Leader) IsLeader(ctx context.Context) (bool, error) {
	if !l.cfg.JavaSchedule {
		return l.TakeLock(ctx)
	}
	now := l.clock.Now()
	l.mu.Lock()
	if l.stalled {
		l.mu.Unlock()
		return false, nil
	}
	if l.version != "" {
		// getLock answers the local lock; it counts as expired once no
		// heartbeat has succeeded for the lease duration (LockItem.isExpired).
		expired := now.Sub(l.lastBeat) > l.cfg.LockLeaseDuration
		l.dec.lastCheck, l.dec.lastResult = now, !expired
		l.mu.Unlock()
		return !expired, nil
	}
	if !l.dec.lastResult && !l.dec.lastCheck.IsZero() && now.Before(l.dec.lastCheck.Add(l.cfg.HeartbeatPeriod)) {
		l.mu.Unlock()
		return false, nil
	}
	l.mu.Unlock()

	item, ok, err := l.readLock(ctx)
	if err != nil {
		return false, err
	}
	leader := false
	switch {
	case !ok:
		// tryAcquireLock: read again, then Put if absent.
		if _, ok, err = l.readLock(ctx); err != nil {
			return false, err
		}
		if !ok {
			got, err := l.TakeLock(ctx)
			if err != nil {
				return false, err
			}
			leader = got
		}
	case item.Owner == l.cfg.WorkerID:
		// Ours by name but not in this process's memory (a restarted
		// worker): the decider answers true (line 167) though no
		// heartbeat runs; the port takes it over as a stale lock would be.
		leader = false
	case l.cfg.StaleTakeover:
		leader, err = l.takeStale(ctx, item, now)
		if err != nil {
			return false, err
		}
	}
	l.mu.Lock()
	l.dec.lastCheck, l.dec.lastResult = l.clock.Now(), leader
	l.mu.Unlock()
	return leader, nil
}

// takeStale times the observed version and takes the lock once it has
// been unchanged for the item's leaseDuration since first seen.
func (l *Leader) takeStale(ctx context.Context, item LockItem, now time.Time) (bool, error) {
	ms, _ := strconv.ParseInt(item.LeaseDuration, 10, 64)
	l.mu.Lock()
	if l.dec.obs.version != item.Version {
		l.dec.obs = lockObservation{version: item.Version, first: now, duration: time.Duration(ms) * time.Millisecond}
		l.mu.Unlock()
		return false, nil
	}
	stale := now.Sub(l.dec.obs.first) > l.dec.obs.duration
	l.mu.Unlock()
	if !stale {
		return false, nil
	}
	// tryAcquireLock reads the item once more (acquireLock line 467).
	again, ok, err := l.readLock(ctx)
	if err != nil || !ok || again.Version != item.Version {
		return false, err
	}
	table, keyAttr := l.f.lockLocation()
	v := newUUID()
	_, err = l.f.DDB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(table),
		Item: map[string]ddbtypes.AttributeValue{
			entityTypeAttr: s(entityLeader), keyAttr: s(LeaderKey), lockOwnerName: s(l.cfg.WorkerID),
			lockDuration: s(strconv.FormatInt(l.cfg.LockLeaseDuration.Milliseconds(), 10)), lockVersion: s(v),
		},
		ConditionExpression:       aws.String("attribute_exists(#pk) AND #rvn = :rvn"),
		ExpressionAttributeNames:  map[string]string{"#pk": keyAttr, "#rvn": lockVersion},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":rvn": s(item.Version)},
	})
	if err := wrapWrite("take stale lock", err); err != nil {
		if errors.Is(err, ErrConditionFailed) {
			return false, nil
		}
		return false, err
	}
	l.mu.Lock()
	l.version, l.stalled, l.lastBeat = v, false, l.clock.Now()
	l.dec.obs = lockObservation{}
	l.startHeartbeatLocked()
	l.mu.Unlock()
	return true, nil
}

// readLock is getLockFromDynamoDB: a consistent GetItem of the lock.
func (l *Leader) readLock(ctx context.Context) (LockItem, bool, error) {
	l.lockReads.Add(1)
	return l.f.ReadLock(ctx)
}

// RunJava runs the worker's whole leader side on the Java schedule until
// ctx ends: the Scheduler's isLeader every second, the
// LeaseAssignmentManager (Run) and the PeriodicShardSyncManager's audit,
// a full scan every leasesRecoveryAuditorExecutionFrequencyMillis (2 min,
// LeaseManagementConfig line 293) on the leader once the Scheduler has
// seen it lead (leaderSynced, PeriodicShardSyncManager.runShardSync line
// 208). The audit creates nothing: the simulated tables have every lease.
func (l *Leader) RunJava(ctx context.Context) error {
	var synced atomic.Bool
	done := make(chan struct{}, 2)
	go func() {
		defer func() { done <- struct{}{} }()
		for clock.Sleep(ctx, l.clock, time.Second) == nil {
			ok, _ := l.IsLeader(ctx)
			synced.Store(ok)
		}
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		for clock.Sleep(ctx, l.clock, l.cfg.AuditInterval) == nil {
			if ok, _ := l.IsLeader(ctx); ok && synced.Load() {
				l.audits.Add(1)
				_, _ = l.scanLeases(ctx)
			}
		}
	}()
	err := l.Run(ctx)
	<-done
	<-done
	return err
}

// Audits counts the audit scans.
func (l *Leader) Audits() int64 { return l.audits.Load() }
