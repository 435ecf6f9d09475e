package reset

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kcltool/kcltool/internal/testenv/clocktest"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// A read-back that is always throttled makes readBackAttempts reads, with
// waits doubling from readBackBackoff up to readBackMaxWait between them,
// and returns the last read's error. The SDK's own retries are off, so
// each read is one request.
func TestReadBackTriesAndWaits(t *testing.T) {
	w := newTable(t)
	w.lease(shardID(0), "", "100")
	p := emulator.NewFaultProxy(t, emulator.DynamoDBEndpoint(t), emulator.Throttle, 1, "GetItem", 5)
	api := dynamodb.NewFromConfig(emulator.Config(), func(o *dynamodb.Options) {
		o.BaseEndpoint, o.RetryMaxAttempts = aws.String(p.URL), 1
	})
	clk := clocktest.New(time.Unix(0, 0))
	wr := &writer{api: api, table: w.table, clock: clk}
	type answer struct {
		found bool
		err   error
	}
	done := make(chan answer, 1)
	go func() {
		item, err := wr.readBack(context.Background(), shardID(0))
		done <- answer{item != nil, err}
	}()
	var waits []time.Duration
	for {
		select {
		case a := <-done:
			if a.found || a.err == nil {
				t.Fatalf("read-back through a throttled table: found %v, err %v; want an error", a.found, a.err)
			}
			if got, want := fmt.Sprint(waits), "[200ms 400ms 800ms 1.6s 3s]"; got != want || p.Injected.Load() != readBackAttempts {
				t.Fatalf("waits %s, reads %d; want %s, %d", got, p.Injected.Load(), want, readBackAttempts)
			}
			return
		case <-time.After(10 * time.Millisecond):
		}
		if next, ok := clk.Next(); ok {
			d := next.Sub(clk.Now())
			waits = append(waits, d)
			clk.Advance(d)
		}
	}
}
