package fanout

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// TestEnsureActiveRace: workers starting at once all register the same
// consumer; the losers' ResourceInUse is not an error, and every one gets
// the one ACTIVE consumer.
func TestEnsureActiveRace(t *testing.T) {
	kin := emulator.Kinesis(t)
	stream := emulator.Name(t, "s")
	emulator.CreateStream(t, kin, stream, 1)
	sum, err := kin.DescribeStreamSummary(context.Background(), &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(stream)})
	if err != nil {
		t.Fatal(err)
	}
	streamARN := aws.ToString(sum.StreamDescriptionSummary.StreamARN)
	const workers = 8
	arns := make([]string, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := EnsureActive(context.Background(), kin, RegisterOptions{StreamARN: streamARN, Name: "app", PollEvery: 50 * time.Millisecond, Timeout: 30 * time.Second})
			arns[i], errs[i] = c.ARN, err
			if err == nil && c.Status != types.ConsumerStatusActive {
				errs[i] = errors.New("status " + string(c.Status))
			}
		}()
	}
	wg.Wait()
	for i := range workers {
		if errs[i] != nil || arns[i] == "" || arns[i] != arns[0] {
			t.Errorf("worker %d: ARN %q, err %v (worker 0 got %q)", i, arns[i], errs[i], arns[0])
		}
	}
	list, err := kin.ListStreamConsumers(context.Background(), &kinesis.ListStreamConsumersInput{StreamARN: aws.String(streamARN)})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Consumers) != 1 {
		t.Errorf("%d consumers registered, want 1", len(list.Consumers))
	}
	// By ARN it is found; a wrong ARN is ErrConsumerNotFound, never
	// registered.
	if _, err := EnsureActive(context.Background(), kin, RegisterOptions{ARN: arns[0]}); err != nil {
		t.Errorf("by ARN: %v", err)
	}
	_, err = EnsureActive(context.Background(), kin, RegisterOptions{ARN: streamARN + "/consumer/nobody:1"})
	if !errors.Is(err, ErrConsumerNotFound) {
		t.Errorf("a missing consumer by ARN: %v, want ErrConsumerNotFound", err)
	}
}
