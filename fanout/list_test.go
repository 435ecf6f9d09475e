package fanout

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/internal/awserr"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// registerConsumers registers the named consumers on the stream, as a
// worker would, and returns the stream's ARN.
func registerConsumers(t *testing.T, kin *kinesis.Client, stream string, names ...string) string {
	t.Helper()
	sum, err := kin.DescribeStreamSummary(context.Background(), &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(stream)})
	if err != nil {
		t.Fatal(err)
	}
	arn := aws.ToString(sum.StreamDescriptionSummary.StreamARN)
	for _, n := range names {
		if _, err := kin.RegisterStreamConsumer(context.Background(), &kinesis.RegisterStreamConsumerInput{StreamARN: aws.String(arn), ConsumerName: aws.String(n)}); err != nil {
			t.Fatal(err)
		}
	}
	return arn
}

// countingList counts the listing's requests.
type countingList struct {
	*kinesis.Client
	lists int
}

func (c *countingList) ListStreamConsumers(ctx context.Context, in *kinesis.ListStreamConsumersInput, opts ...func(*kinesis.Options)) (*kinesis.ListStreamConsumersOutput, error) {
	c.lists++
	return c.Client.ListStreamConsumers(ctx, in, opts...)
}

// TestListStreamConsumers lists 0, 1, 3 and 4 consumers from kinesis-local
// by stream name and by ARN: every consumer once, sorted by name, with its
// ARN, status and creation time. Four go two to a page, which follows
// NextToken. kinesis-local's paging is odd: with 3 consumers and MaxResults
// 2 it answers the first two and no token (so odd counts are listed with
// the default page size, 100, as Kinesis does below the 20-consumer limit),
// and it often gives a token that leads to an empty last page.
func TestListStreamConsumers(t *testing.T) {
	kin := emulator.Kinesis(t)
	ctx := context.Background()
	for _, names := range [][]string{nil, {"only"}, {"orders-b", "audit", "orders-a"}, {"d", "c", "b", "a"}} {
		t.Run(fmt.Sprintf("%d consumers", len(names)), func(t *testing.T) {
			stream := emulator.Name(t, "s")
			emulator.CreateStream(t, kin, stream, 1)
			before := time.Now().Add(-time.Second)
			arn := registerConsumers(t, kin, stream, names...)
			for _, by := range []string{stream, arn} {
				api := &countingList{Client: kin}
				opt, minPages := ListOptions{}, 1
				if len(names) == 4 {
					opt.PageSize, minPages = 2, 2
				}
				l, err := ListStreamConsumers(ctx, api, by, opt)
				if err != nil {
					t.Fatal(err)
				}
				want := slices.Sorted(slices.Values(names))
				if got := l.Names(); !slices.Equal(got, want) {
					t.Fatalf("by %s: names %v, want %v", by, got, want)
				}
				if l.StreamName != stream || l.StreamARN != arn {
					t.Errorf("stream %q %q, want %q %q", l.StreamName, l.StreamARN, stream, arn)
				}
				if l.Pages < minPages || api.lists != l.Pages {
					t.Errorf("%d pages (%d requests), want at least %d", l.Pages, api.lists, minPages)
				}
				for _, c := range l.Consumers {
					if c.ARN == "" || c.StreamARN != arn || c.CreatedAt.Before(before) || c.CreatedAt.After(time.Now().Add(time.Second)) {
						t.Errorf("consumer %+v", c)
					}
					if c.Status != types.ConsumerStatusCreating && c.Status != types.ConsumerStatusActive {
						t.Errorf("%s: status %s", c.Name, c.Status)
					}
					d, err := DescribeStreamConsumer(ctx, kin, c.ARN)
					if err != nil || d.Name != c.Name || d.ARN != c.ARN || d.StreamARN != arn {
						t.Errorf("describe %s: %+v, %v", c.ARN, d, err)
					}
				}
			}
		})
	}
}

// TestListStreamConsumersUnknownStream: the stream's absence is
// ResourceNotFound, for the command to name.
func TestListStreamConsumersUnknownStream(t *testing.T) {
	_, err := ListStreamConsumers(context.Background(), emulator.Kinesis(t), emulator.Name(t, "missing"), ListOptions{})
	if !awserr.NotFound(err) {
		t.Fatalf("err %v, want ResourceNotFoundException", err)
	}
}

// waitActive polls until the consumer is ACTIVE.
func waitActive(t *testing.T, kin *kinesis.Client, arn string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		d, err := DescribeStreamConsumer(context.Background(), kin, arn)
		if err != nil {
			t.Fatal(err)
		}
		if d.Active() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still %s after 10s", arn, d.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDeregisterStreamConsumer: a CREATING consumer cannot be deregistered
// yet (ResourceInUse, as on Kinesis); an ACTIVE one goes DELETING, then
// away, and the other consumers stay.
func TestDeregisterStreamConsumer(t *testing.T) {
	kin := emulator.Kinesis(t)
	ctx := context.Background()
	stream := emulator.Name(t, "s")
	emulator.CreateStream(t, kin, stream, 1)
	registerConsumers(t, kin, stream, "keep", "retire")
	l, err := ListStreamConsumers(ctx, kin, stream, ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, ok := l.Find("retire")
	if !ok {
		t.Fatalf("no consumer retire in %v", l.Names())
	}
	if c.Status == types.ConsumerStatusCreating {
		if err := DeregisterStreamConsumer(ctx, kin, c.ARN); !awserr.Is(err, "ResourceInUseException") {
			t.Errorf("deregistering a CREATING consumer: %v, want ResourceInUseException", err)
		}
	}
	waitActive(t, kin, c.ARN)
	if err := DeregisterStreamConsumer(ctx, kin, c.ARN); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		d, err := DescribeStreamConsumer(ctx, kin, c.ARN)
		if awserr.NotFound(err) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if d.Status != types.ConsumerStatusDeleting {
			t.Fatalf("after deregistering: %s, want DELETING", d.Status)
		}
		if time.Now().After(deadline) {
			t.Fatal("still DELETING after 10s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	l, err = ListStreamConsumers(ctx, kin, stream, ListOptions{})
	if err != nil || !slices.Equal(l.Names(), []string{"keep"}) {
		t.Fatalf("after: %v, %v", l.Names(), err)
	}
	var unknown *UnknownConsumerError
	if err := (&UnknownConsumerError{Stream: stream, Name: "retire", Existing: l.Names()}); !errors.As(error(err), &unknown) || err.Error() != fmt.Sprintf(`stream %q has no consumer "retire"; its consumers: keep`, stream) {
		t.Errorf("error text %q", err.Error())
	}
}
