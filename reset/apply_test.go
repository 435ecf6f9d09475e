package reset

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kcltool/kcltool/leasecore"
)

// positionsPlan plans a --from-file reset of the given leases.
func (w *world) positionsPlan(cps map[string]string) *Plan {
	w.t.Helper()
	var pos []Position
	for k, cp := range cps {
		pos = append(pos, Position{LeaseKey: k, Checkpoint: seq(cp)})
	}
	return w.plan(ResetOptions{Target: Target{Positions: pos, File: "test.csv"}})
}

func TestExecuteRefusesALiveApplication(t *testing.T) {
	w := newTable(t)
	w.lease(shardID(0), "worker-a", "100")
	w.lease(shardID(1), "worker-b", "200")
	p := w.positionsPlan(map[string]string{shardID(0): leasecore.TRIM_HORIZON})

	// worker-b keeps renewing its lease while the sample runs.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		l := w.leases()[shardID(1)]
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			var err error
			if l, err = leasecore.RenewLease(w.ctx, w.ddb, w.table, l, "worker-b"); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	_, err := Execute(w.ctx, w.ddb, p, ExecOptions{Sample: 300 * time.Millisecond})
	close(stop)
	wg.Wait()
	var refused *RefusedError
	if !errors.As(err, &refused) {
		t.Fatalf("err %v, want a *RefusedError", err)
	}
	if !slices.Equal(refused.Workers, []string{"worker-b"}) || !slices.Equal(refused.Moved, []string{shardID(1)}) {
		t.Errorf("refusal names workers %v, leases %v", refused.Workers, refused.Moved)
	}
	if !strings.Contains(err.Error(), "workers worker-b") {
		t.Errorf("message %q does not name the worker", err)
	}
	if got := w.leases()[shardID(0)]; got.Checkpoint.SequenceNumber != "100" || got.LeaseCounter != 7 {
		t.Errorf("refused reset wrote: %+v", got)
	}

	// Stopped, the same reset goes through.
	x := w.execute(w.positionsPlan(map[string]string{shardID(0): leasecore.TRIM_HORIZON}), ExecOptions{Sample: 100 * time.Millisecond})
	if x.Count(OutcomeApplied) != 1 || x.Live.Live() {
		t.Fatalf("results %+v, live %+v", x.Results, x.Live)
	}
}

// A live coordinator holds the lease and checkpoints it continuously. A
// forced reset must take it away: the holder's checkpoints fail from then
// on and never overwrite the reset, and the next holding starts from the
// reset checkpoint.
func TestExecuteForceTakesTheLeaseFromALiveCoordinator(t *testing.T) {
	w := newTable(t)
	key := shardID(0)
	w.lease(key, "", "1000")
	var (
		mu     sync.Mutex
		gained []leasecore.LeaseEvent
		lost   atomic.Int32
	)
	coord, err := leasecore.NewCoordinator(w.ddb, w.table,
		leasecore.Config{WorkerID: "live-worker", FailoverTime: time.Second, TakerInterval: 100 * time.Millisecond}, nil,
		leasecore.Options{OnEvent: func(e leasecore.LeaseEvent) {
			mu.Lock()
			defer mu.Unlock()
			switch e.Kind {
			case leasecore.LeaseGained:
				gained = append(gained, e)
			case leasecore.LeaseLost:
				lost.Add(1)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(w.ctx)
	defer cancel()
	if err := coord.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer coord.Stop(context.Background(), false) //nolint:errcheck // the test is over
	// Wait for the event, not only the held set: events are delivered
	// after the held set changes. Reading gained[0] before it arrived
	// panicked with mu held, and the coordinator's Stop then waited for
	// ever on the event handler (CI hung for 10 minutes).
	var tenure uint64
	waitUntil(t, 5*time.Second, "the coordinator holds the lease", func() bool {
		mu.Lock()
		defer mu.Unlock()
		if len(gained) == 0 || !coord.IsHeld(key) {
			return false
		}
		tenure = gained[0].Tenure
		return true
	})

	// The processor of that holding checkpoints every 10ms, forward only,
	// except while paused.
	var (
		next     atomic.Int64
		lastOK   atomic.Int64
		sawLost  atomic.Bool
		paused   atomic.Bool
		procDone = make(chan struct{})
		stopProc = make(chan struct{})
		// checkpoints that succeeded after the reset was written
		okAfterAt atomic.Int64
		written   atomic.Bool
	)
	next.Store(1000)
	go func() {
		defer close(procDone)
		for {
			select {
			case <-stopProc:
				return
			case <-time.After(10 * time.Millisecond):
			}
			if paused.Load() {
				continue
			}
			n := next.Add(1)
			err := coord.CheckpointTenure(w.ctx, key, tenure, seq(itoa(n)))
			switch {
			case err == nil:
				lastOK.Store(n)
				if written.Load() {
					okAfterAt.Add(1)
				}
			case errors.Is(err, leasecore.ErrLeaseLost):
				sawLost.Store(true)
			}
		}
	}()
	waitUntil(t, 5*time.Second, "the processor to checkpoint", func() bool { return lastOK.Load() > 1001 })

	// The processor pauses, so that the renewer, not a checkpoint, is the
	// first to meet the reset: KCL 2.x takes a failed renewal for its own
	// when the item shows it as owner with the counter it meant to write,
	// so the reset must not leave the owner in place.
	paused.Store(true)
	time.Sleep(20 * time.Millisecond)
	p := w.positionsPlan(map[string]string{key: "5"})
	x := w.execute(p, ExecOptions{Sample: 400 * time.Millisecond, Force: true})
	written.Store(true)
	if !slices.Equal(x.Live.Workers, []string{"live-worker"}) {
		t.Errorf("live workers %v", x.Live.Workers)
	}
	if r := x.Results[0]; r.Outcome != OutcomeApplied || !strings.Contains(r.Detail, "live-worker") {
		t.Fatalf("result %+v", r)
	}
	waitUntil(t, 5*time.Second, "the holder to lose the lease", func() bool { return lost.Load() > 0 })
	paused.Store(false)
	waitUntil(t, 5*time.Second, "the old holding's checkpoint to fail", func() bool { return sawLost.Load() })
	// The new holding (this same worker's taker takes the unowned lease
	// back) starts from the reset checkpoint.
	waitUntil(t, 5*time.Second, "a new holding", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(gained) > 1
	})
	mu.Lock()
	again := gained[len(gained)-1]
	mu.Unlock()
	if again.Tenure == tenure || again.Lease.Checkpoint.SequenceNumber != "5" {
		t.Errorf("new holding: tenure %d (old %d), checkpoint %s, want 5", again.Tenure, tenure, again.Lease.Checkpoint.SequenceNumber)
	}
	time.Sleep(300 * time.Millisecond)
	close(stopProc)
	<-procDone
	if n := okAfterAt.Load(); n != 0 {
		t.Errorf("the old holding checkpointed %d times after the reset", n)
	}
	if cp := w.leases()[key].Checkpoint.SequenceNumber; cp != "5" {
		t.Errorf("checkpoint %s after the reset, want 5: the old holder overwrote it", cp)
	}
}

// interferingAPI makes a change of its own to a lease right before the
// first conditional write to it, the way a worker might between the
// second read and the write.
type interferingAPI struct {
	TableAPI
	once   sync.Once
	meddle func()
}

func (i *interferingAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	i.once.Do(i.meddle)
	return i.TableAPI.UpdateItem(ctx, in, opts...)
}

func TestExecuteSkipsLeasesThatChangedSinceThePlan(t *testing.T) {
	w := newTable(t)
	for i := range 4 {
		w.lease(shardID(i), "", "100")
	}
	p := w.positionsPlan(map[string]string{shardID(0): "50", shardID(1): "50", shardID(2): "50", shardID(3): "50"})

	// During the sample: childShardIds written on 1 (no counter move, as
	// at SHARD_END) and 2 deleted (lease cleanup).
	if err := leasecore.SetChildShardIDs(w.ctx, w.ddb, w.table, shardID(1), []string{shardID(9)}); err != nil {
		t.Fatal(err)
	}
	if _, err := leasecore.DeleteLease(w.ctx, w.ddb, w.table, shardID(2)); err != nil {
		t.Fatal(err)
	}
	// Between the second read and the write: another writer checkpoints 0.
	api := &interferingAPI{TableAPI: w.ddb, meddle: func() {
		l := w.leases()[shardID(0)]
		if _, err := leasecore.CheckpointLease(w.ctx, w.ddb, w.table, l, seq("150")); err != nil {
			t.Error(err)
		}
	}}
	x, err := Execute(w.ctx, api, p, ExecOptions{Sample: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range p.Changes {
		want := map[string]Outcome{shardID(0): OutcomeSkipped, shardID(1): OutcomeSkipped, shardID(2): OutcomeSkipped, shardID(3): OutcomeApplied}[c.LeaseKey]
		if x.Results[i].Outcome != want {
			t.Errorf("%s: %+v, want %s", c.LeaseKey, x.Results[i], want)
		}
		t.Logf("%s: %s %s", c.LeaseKey, x.Results[i].Outcome, x.Results[i].Detail)
	}
	ls := w.leases()
	for key, cp := range map[string]string{shardID(0): "150", shardID(1): "100", shardID(3): "50"} {
		if got := ls[key].Checkpoint.SequenceNumber; got != cp {
			t.Errorf("%s checkpoint %s, want %s", key, got, cp)
		}
	}
	if _, ok := ls[shardID(2)]; ok {
		t.Errorf("the deleted lease came back")
	}
}

func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
