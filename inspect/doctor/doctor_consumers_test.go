package doctor

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// seenConsumers passes every call to kinesis-local and remembers the
// consumer statuses the listings answered, so a test can tell what doctor
// was shown.
type seenConsumers struct {
	*kinesis.Client
	mu     sync.Mutex
	status map[string]kintypes.ConsumerStatus
}

func (s *seenConsumers) ListStreamConsumers(ctx context.Context, in *kinesis.ListStreamConsumersInput, opts ...func(*kinesis.Options)) (*kinesis.ListStreamConsumersOutput, error) {
	out, err := s.Client.ListStreamConsumers(ctx, in, opts...)
	if err == nil {
		s.mu.Lock()
		for _, c := range out.Consumers {
			s.status[aws.ToString(c.ConsumerName)] = c.ConsumerStatus
		}
		s.mu.Unlock()
	}
	return out, err
}

// consumer registers a consumer on the rig's stream and returns its ARN.
func (r *rig) consumer(name string) string {
	r.t.Helper()
	sum, err := r.kin.DescribeStreamSummary(context.Background(), &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(r.stream)})
	if err != nil {
		r.t.Fatal(err)
	}
	out, err := r.kin.RegisterStreamConsumer(context.Background(), &kinesis.RegisterStreamConsumerInput{
		StreamARN: sum.StreamDescriptionSummary.StreamARN, ConsumerName: aws.String(name)})
	if err != nil {
		r.t.Fatal(err)
	}
	return aws.ToString(out.Consumer.ConsumerARN)
}

func (r *rig) waitConsumerActive(arn string) {
	r.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		out, err := r.kin.DescribeStreamConsumer(context.Background(), &kinesis.DescribeStreamConsumerInput{ConsumerARN: aws.String(arn)})
		if err != nil {
			r.t.Fatal(err)
		}
		if out.ConsumerDescription.ConsumerStatus == kintypes.ConsumerStatusActive {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s not ACTIVE after 20s", arn)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runSeen is rig.run with the Kinesis client seen through s.
func (r *rig) runSeen(s *seenConsumers, step func(i int)) *Report {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	apis := r.apis()
	apis.Kinesis = s
	d, err := New(ctx, apis, r.options())
	if err != nil {
		r.t.Fatal(err)
	}
	step(0)
	done := make(chan *Report, 1)
	go func() {
		rep, err := d.Run(ctx)
		if err != nil {
			r.t.Error(err)
		}
		done <- rep
	}()
	for i := 1; i < d.samplesPerWindow(); i++ {
		if err := r.clock.WaitTimers(ctx, 1); err != nil {
			r.t.Fatal(err)
		}
		step(i)
		r.clock.Advance(r.failover)
	}
	return <-done
}

// TestDoctorConsumerNotActive: the application's consumer just
// deregistered (DELETING) is a warning; another application's consumer
// just registered (CREATING) is information; ACTIVE ones are not reported.
// kinesis-local holds both states for 500 ms, so the changes are made
// right before the last read. A machine too slow to list them in time is
// seen in what the listing answered, and the scenario runs again.
func TestDoctorConsumerNotActive(t *testing.T) {
	for attempt := 1; ; attempt++ {
		r := newRig(t, time.Second, time.Second).withStream(1)
		r.fleet("w1")
		app := r.table // the KCL names the consumer after the application
		arn := r.consumer(app)
		r.waitConsumerActive(r.consumer("steady"))
		r.waitConsumerActive(arn)
		seen := &seenConsumers{Client: r.kin, status: map[string]kintypes.ConsumerStatus{}}
		rep := r.runSeen(seen, func(i int) {
			if i > 0 {
				r.renewAll()
			}
			if i == 1 {
				if _, err := r.kin.DeregisterStreamConsumer(context.Background(), &kinesis.DeregisterStreamConsumerInput{ConsumerARN: aws.String(arn)}); err != nil {
					t.Fatal(err)
				}
				r.consumer("newcomer")
			}
		})
		if seen.status[app] != kintypes.ConsumerStatusDeleting || seen.status["newcomer"] != kintypes.ConsumerStatusCreating {
			if attempt < 3 {
				t.Logf("attempt %d: doctor listed %v, too late for the 500 ms states; again", attempt, seen.status)
				continue
			}
			t.Fatalf("doctor never listed the consumers in time: %v", seen.status)
		}
		var ours, theirs *Finding
		for i, f := range rep.Findings {
			if f.ID != FindConsumerNotActive {
				continue
			}
			switch {
			case strings.Contains(f.Summary, `"`+app+`"`):
				ours = &rep.Findings[i]
			case strings.Contains(f.Summary, `"newcomer"`):
				theirs = &rep.Findings[i]
			default:
				t.Errorf("unexpected: %s", f.Summary)
			}
		}
		if ours == nil || theirs == nil {
			t.Fatalf("findings:\n%s", dump(rep))
		}
		if ours.Severity != SeverityWarn || !strings.Contains(ours.Summary, "the application's enhanced fan-out consumer \""+app+"\" on stream "+r.stream+" is DELETING") ||
			!strings.Contains(ours.Cause, "deregistered") ||
			// A Java KCL worker does not register it again: it ends its
			// open shards (docs/efo.md).
			!strings.Contains(ours.Cause, "a running Java KCL 2.x or 3.x worker instead takes the refusal for the end of each shard it reads and checkpoints SHARD_END on open shards") {
			t.Errorf("ours: %s %s / %s", ours.Severity, ours.Summary, ours.Cause)
		}
		if theirs.Severity != SeverityInfo || !strings.Contains(theirs.Summary, `another application's enhanced fan-out consumer "newcomer" on stream `+r.stream+" is CREATING") {
			t.Errorf("theirs: %s %s", theirs.Severity, theirs.Summary)
		}
		// kinesis-local answers a non-empty listing with a token to an
		// empty page: two requests where Kinesis makes one.
		if n := rep.Cost.ListStreamConsumers; n < 1 || n > 2 {
			t.Errorf("cost %+v: want the one listing", rep.Cost)
		}
		return
	}
}

// TestDoctorSubscriptionErrors reads SubscribeToShard.Success and
// .RateExceeded per consumer from the in-test CloudWatch (as AWS/Kinesis
// publishes them): failed subscriptions of the application's consumer are
// a warning; a consumer without failures is not reported.
func TestDoctorSubscriptionErrors(t *testing.T) {
	r := newRig(t, time.Second, time.Second).withStream(1).withCloudWatch()
	r.fleet("w1")
	app := r.table
	r.waitConsumerActive(r.consumer(app))
	r.waitConsumerActive(r.consumer("healthy"))
	at := r.clock.Now().Add(-2 * time.Minute)
	dims := func(consumer string) map[string]string {
		return map[string]string{"StreamName": r.stream, "ConsumerName": consumer}
	}
	for i, v := range []float64{1, 0, 1, 0, 0, 1} { // 6 attempts, 3 subscribed
		r.cw.Add("AWS/Kinesis", "SubscribeToShard.Success", dims(app), at.Add(time.Duration(i)*time.Second), v)
	}
	r.cw.Add("AWS/Kinesis", "SubscribeToShard.RateExceeded", dims(app), at, 2)
	r.cw.Add("AWS/Kinesis", "SubscribeToShard.Success", dims("healthy"), at, 1)
	rep := r.run(func(i int) {
		if i > 0 {
			r.renewAll()
		}
	})
	f := want(t, rep, FindSubscriptionErrors, SeverityWarn,
		`SubscribeToShard failed 3 times in 5m0s for the application's consumer "`+app+`" on stream `+r.stream+" (2 over the rate or in use)")
	if f.Evidence.Values["attempts"] != 6 || f.Evidence.Values["subscribed"] != 3 || f.Evidence.Values["rateExceeded"] != 2 {
		t.Errorf("values %v", f.Evidence.Values)
	}
	for _, g := range rep.Findings {
		if g.ID == FindSubscriptionErrors && strings.Contains(g.Summary, "healthy") {
			t.Errorf("healthy consumer reported: %s", g.Summary)
		}
	}
	absent(t, rep, FindConsumerNotActive)
}

// TestDoctorNoConsumers: a stream read by polling only lists its consumers
// once and reports nothing about fan-out.
func TestDoctorNoConsumers(t *testing.T) {
	r := newRig(t, time.Second, time.Second).withStream(1)
	r.fleet("w1")
	rep := r.run(func(i int) {
		if i > 0 {
			r.renewAll()
		}
	})
	absent(t, rep, FindConsumerNotActive, FindSubscriptionErrors)
	if rep.Cost.ListStreamConsumers != 1 {
		t.Errorf("cost %+v: want one ListStreamConsumers", rep.Cost)
	}
}
