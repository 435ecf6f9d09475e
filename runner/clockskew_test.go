package runner

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// A worker whose servers' clocks are ten minutes off its own (both
// services, each refusing a signature more than five minutes off, as AWS
// does) handles every record and checkpoints it: every call goes through
// the SDK, which learns the offset from the Date of the first refusal and
// signs the rest with it. A request path of its own that signs with the
// local clock is refused at every call, and the shard stalls with its
// lease held (issue 23).
func TestWorkerServerClockOff(t *testing.T) {
	for _, c := range []struct {
		name   string
		offset time.Duration
	}{{"server ahead", 10 * time.Minute}, {"server behind", -10 * time.Minute}} {
		t.Run(c.name, func(t *testing.T) {
			s := newStack(t, 2)
			kp := emulator.NewFaultProxy(t, emulator.KinesisEndpoint(t), emulator.Throttle, 0, "", 1)
			dp := emulator.NewFaultProxy(t, emulator.DynamoDBEndpoint(t), emulator.Throttle, 0, "", 1)
			kp.SetClockOffset(c.offset)
			dp.SetClockOffset(c.offset)
			through := s
			through.kin = kinesis.NewFromConfig(emulator.Config(), func(o *kinesis.Options) { o.BaseEndpoint = aws.String(kp.URL) })
			through.ddb = via(dp.URL)
			out := outFile(t)
			cfg := s.config(t, "w1", out)
			s.put(t, func(k string) string { return k + ":before" }, keys("k", 20)...)
			start(t, through, cfg)
			eventually(t, 30*time.Second, "20 records handled", func() bool { return len(readHandled(t, out)) >= 20 })
			s.put(t, func(k string) string { return k + ":after" }, keys("k", 20)...)
			eventually(t, 30*time.Second, "40 records handled", func() bool { return len(readHandled(t, out)) >= 40 })

			eventuallyCheckpointedAt(t, s, "checkpoints at the last records", lastPerShard(readHandled(t, out)))
			// Each client is refused until it has seen one answer: a few
			// calls made at once at the start, never a shard's every read.
			refused := map[string]int64{}
			for _, op := range []string{"ListShards", "DescribeStreamSummary", "GetShardIterator", "GetRecords"} {
				refused[op] = kp.Refused(op)
			}
			for _, op := range []string{"DescribeTable", "CreateTable", "Scan", "PutItem", "UpdateItem", "GetItem"} {
				refused[op] = dp.Refused(op)
			}
			t.Logf("refused for the signing time: %v; passed: kinesis %d, dynamodb %d", refused, kp.Passed.Load(), dp.Passed.Load())
			var total int64
			for _, n := range refused {
				total += n
			}
			if total == 0 {
				t.Fatal("no request refused for its signing time: the test did not exercise the SDK's correction")
			}
			if n := refused["GetRecords"] + refused["GetShardIterator"]; n > 2 {
				t.Fatalf("%d reads refused for their signing time, want at most one per shard", n)
			}
		})
	}
}
