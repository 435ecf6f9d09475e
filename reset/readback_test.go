package reset

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// proxied is a client of the world's table through a fault proxy, with the
// SDK's own retries (3 attempts) and short backoffs.
func (w *world) proxied(fault emulator.Fault, rate float64, match string) (*dynamodb.Client, *emulator.FaultProxy) {
	w.t.Helper()
	p := emulator.NewFaultProxy(w.t, emulator.DynamoDBEndpoint(w.t), fault, rate, match, 5)
	c := dynamodb.NewFromConfig(emulator.Config(), func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(p.URL)
		o.Retryer = retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = 3; o.MaxBackoff = 20 * time.Millisecond })
	})
	return c, p
}

// afterWrite runs hook after each UpdateItem call returns, whatever it
// returned: a place to interleave another writer or to heal a fault at an
// exact point. Every call still goes to the server.
type afterWrite struct {
	TableAPI
	hook func(n int)
	n    int
}

func (a *afterWrite) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opt ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := a.TableAPI.UpdateItem(ctx, in, opt...)
	a.n++
	a.hook(a.n)
	return out, err
}

func (w *world) execVia(api TableAPI, p *Plan) *Execution {
	w.t.Helper()
	x, err := Execute(w.ctx, api, p, ExecOptions{Sample: 50 * time.Millisecond})
	if err != nil {
		w.t.Fatalf("execute: %v", err)
	}
	return x
}

// Every answer of every attempt lost: each write applied on its first
// attempt, its retries failed their condition against it, and the SDK
// gave up with a connection error. The read-back finds each lease as
// meant: applied, confirmed by the read-back, written once.
func TestExecuteConfirmsWritesWhoseAnswersWereAllLost(t *testing.T) {
	w := newTable(t)
	for i := range 3 {
		w.lease(shardID(i), "", "100")
	}
	p := w.positionsPlan(map[string]string{shardID(0): "TRIM_HORIZON", shardID(1): "TRIM_HORIZON", shardID(2): "TRIM_HORIZON"})
	api, proxy := w.proxied(emulator.LoseResponse, 1, "UpdateItem")
	x := w.execVia(api, p)
	if proxy.Injected.Load() < 3 {
		t.Fatalf("%d answers lost, want every one", proxy.Injected.Load())
	}
	for i, r := range x.Results {
		if r.Outcome != OutcomeApplied || r.ConfirmedBy != ConfirmedByReadBack {
			t.Errorf("%s: %+v, want applied, confirmed by read-back", p.Changes[i].LeaseKey, r)
		}
	}
	for k, l := range w.leases() {
		if l.Checkpoint.SequenceNumber != "TRIM_HORIZON" || l.LeaseCounter != 8 {
			t.Errorf("%s: %+v, want TRIM_HORIZON written once (leaseCounter 7 + 1)", k, l)
		}
	}
}

// A write whose answer was lost, and then another writer changed the
// lease before the read-back: the read shows neither the lease as read nor
// as meant. It is reported skipped, not applied, and not written again.
func TestExecuteSkipsALeaseChangedByAnotherWriterAfterALostAnswer(t *testing.T) {
	w := newTable(t)
	w.lease(shardID(0), "", "100")
	p := w.positionsPlan(map[string]string{shardID(0): "TRIM_HORIZON"})
	api, _ := w.proxied(emulator.Drop, 1, "UpdateItem") // the write never arrives
	other := &afterWrite{TableAPI: api, hook: func(n int) {
		if n == 1 { // another operator sets it meanwhile
			if err := writeCheckpoint(w.ctx, w.ddb, w.table, w.items()[shardID(0)], seq("300")); err != nil {
				t.Error(err)
			}
		}
	}}
	x := w.execVia(other, p)
	if r := x.Results[0]; r.Outcome != OutcomeSkipped || r.ConfirmedBy != "" || !strings.Contains(r.Detail, "changed since the plan") {
		t.Errorf("result %+v, want skipped", r)
	}
	if other.n != 1 {
		t.Errorf("%d writes, want 1: a lease someone else changed is not written again", other.n)
	}
	if l := w.leases()[shardID(0)]; l.Checkpoint.SequenceNumber != "300" {
		t.Errorf("lease %+v, want the other writer's 300", l)
	}
}

// A write that never reached the table (every attempt's connection
// dropped): the read-back finds the lease unchanged, so it is tried once
// more with the same condition, and applies. Twice unchanged is a failure
// that stops the rest, with the lease untouched.
func TestExecuteRetriesOnceAWriteThatDidNotApply(t *testing.T) {
	t.Run("healed", func(t *testing.T) {
		w := newTable(t)
		w.lease(shardID(0), "", "100")
		p := w.positionsPlan(map[string]string{shardID(0): "TRIM_HORIZON"})
		api, proxy := w.proxied(emulator.Drop, 1, "UpdateItem")
		heal := &afterWrite{TableAPI: api, hook: func(int) { proxy.SetRate(0) }}
		x := w.execVia(heal, p)
		if r := x.Results[0]; r.Outcome != OutcomeApplied || heal.n != 2 {
			t.Errorf("result %+v after %d writes, want applied by the second", r, heal.n)
		}
		if l := w.leases()[shardID(0)]; l.Checkpoint.SequenceNumber != "TRIM_HORIZON" || l.LeaseCounter != 8 {
			t.Errorf("lease %+v, want TRIM_HORIZON written once (leaseCounter 7 + 1)", l)
		}
	})
	t.Run("still failing", func(t *testing.T) {
		w := newTable(t)
		w.lease(shardID(0), "", "100")
		w.lease(shardID(1), "", "100")
		p := w.positionsPlan(map[string]string{shardID(0): "TRIM_HORIZON", shardID(1): "TRIM_HORIZON"})
		api, _ := w.proxied(emulator.Drop, 1, "UpdateItem")
		count := &afterWrite{TableAPI: api, hook: func(int) {}}
		x := w.execVia(count, p)
		if r := x.Results[0]; r.Outcome != OutcomeFailed || !strings.Contains(r.Detail, "tried twice; the lease is unchanged") || count.n != 2 {
			t.Errorf("result %+v after %d writes, want failed after 2", r, count.n)
		}
		if r := x.Results[1]; r.Outcome != OutcomeNotRun {
			t.Errorf("second lease %+v, want not attempted", r)
		}
		if l := w.leases()[shardID(0)]; l.Checkpoint.SequenceNumber != "100" || l.LeaseCounter != 7 {
			t.Errorf("lease %+v, want untouched", l)
		}
	})
}

// An import (PutItem) whose answers are all lost is confirmed the same way.
func TestImportConfirmsRestoresWhoseAnswersWereLost(t *testing.T) {
	w := newTable(t)
	w.lease(shardID(0), "worker-a", "100")
	e, err := ExportTable(w.ctx, w.ddb, w.table, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeCheckpoint(w.ctx, w.ddb, w.table, w.items()[shardID(0)], seq("TRIM_HORIZON")); err != nil {
		t.Fatal(err)
	}
	p, err := PlanImport(w.ctx, w.ddb, ImportOptions{Table: w.table, Export: e, File: "e.json"})
	if err != nil {
		t.Fatal(err)
	}
	api, _ := w.proxied(emulator.LoseResponse, 1, "PutItem")
	x := w.execVia(api, p)
	if r := x.Results[0]; r.Outcome != OutcomeApplied || r.ConfirmedBy != ConfirmedByReadBack {
		t.Errorf("result %+v, want applied, confirmed by read-back", r)
	}
	if l := w.leases()[shardID(0)]; l.Checkpoint.SequenceNumber != "100" || l.LeaseOwner != "worker-a" || l.LeaseCounter != 9 {
		t.Errorf("lease %+v, want restored once (checkpoint 100, worker-a, counter 8 + 1)", l)
	}
}
