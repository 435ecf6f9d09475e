package fanout

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// TestDeregister deregisters an ACTIVE consumer and reads it back DELETING
// (or as c, marked DELETING, once it is gone); a second deregistration of
// the same consumer, no longer ACTIVE, is a *NotActiveError that says what
// it became, as when it changes between the listing and the call.
func TestDeregister(t *testing.T) {
	kin := emulator.Kinesis(t)
	ctx := context.Background()
	stream := emulator.Name(t, "s")
	emulator.CreateStream(t, kin, stream, 1)
	streamARN := registerConsumers(t, kin, stream)
	reg, err := EnsureActive(ctx, kin, RegisterOptions{StreamARN: streamARN, Name: "app", PollEvery: 50 * time.Millisecond, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c, err := DescribeStreamConsumer(ctx, kin, reg.ARN)
	if err != nil {
		t.Fatal(err)
	}
	after, err := Deregister(ctx, kin, c)
	if err != nil {
		t.Fatal(err)
	}
	if after.ARN != c.ARN || after.Status != types.ConsumerStatusDeleting {
		t.Fatalf("after deregistration: %+v, want %s DELETING", after, c.ARN)
	}
	_, err = Deregister(ctx, kin, c)
	var notActive *NotActiveError
	if !errors.As(err, &notActive) {
		t.Fatalf("second deregistration: %v (%T), want a *NotActiveError", err, err)
	}
	if notActive.Status != string(types.ConsumerStatusDeleting) && notActive.Status != "gone" {
		t.Errorf("second deregistration: status %q, want DELETING or gone", notActive.Status)
	}
	t.Log(err)
}
