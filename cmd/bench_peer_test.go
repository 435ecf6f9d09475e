package cmd

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/smithy-go/middleware"

	"github.com/sirupsen/logrus"
	kclcfg "github.com/vmware/vmware-go-kcl-v2/clientlibrary/config"
	kcl "github.com/vmware/vmware-go-kcl-v2/clientlibrary/interfaces"
	kclworker "github.com/vmware/vmware-go-kcl-v2/clientlibrary/worker"
	kcllog "github.com/vmware/vmware-go-kcl-v2/logger"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// The benchmark's peer: vmware-go-kcl-v2 v1.0.0, an in-process Go KCL, with
// a processor that does nothing but count and checkpoint each batch, as a
// handler that exits 0 makes kcltool checkpoint. It lives in a _test.go
// file so that the kcltool binary never links it.

// peerProcessor counts records and checkpoints every batch.
type peerProcessor struct{ n *atomic.Int64 }

func (p peerProcessor) Initialize(*kcl.InitializationInput) {}

func (p peerProcessor) ProcessRecords(in *kcl.ProcessRecordsInput) {
	if len(in.Records) == 0 {
		return
	}
	p.n.Add(int64(len(in.Records)))
	_ = in.Checkpointer.Checkpoint(in.Records[len(in.Records)-1].SequenceNumber)
}

func (p peerProcessor) Shutdown(in *kcl.ShutdownInput) {
	if in.ShutdownReason == kcl.TERMINATE {
		_ = in.Checkpointer.Checkpoint(nil)
	}
}

type peerFactory struct{ n *atomic.Int64 }

func (f peerFactory) CreateProcessor() kcl.IRecordProcessor { return peerProcessor(f) }

// startPeer runs a vmware-go-kcl-v2 worker from TRIM_HORIZON on its own
// lease table (its schema is not KCL's), with KCL's polling defaults except
// the page size (maxRecords; KCL's default is 10000), the idle time, which
// matches kcltool's, and the shard sync interval: the peer takes one lease per shard sync, 60s apart by default, and would
// spend minutes taking the benchmark's shards. At 50 ms it would also list
// the stream's shards 20 times a second for the whole run, a cost its
// production setting does not have; its ListShards answers therefore come
// from memory after the first (the stream does not change meanwhile). The
// AWS credentials and region come from the environment.
func startPeer(app, stream, kinesisURL, dynamoURL string, maxRecords int, count, cachedListShards *atomic.Int64) (*kclworker.Worker, error) {
	quiet := logrus.New()
	quiet.SetOutput(io.Discard)
	cfg := kclcfg.NewKinesisClientLibConfig(app, stream, emulator.Region, "peer").
		WithKinesisEndpoint(kinesisURL).WithDynamoDBEndpoint(dynamoURL).
		WithInitialPositionInStream(kclcfg.TRIM_HORIZON).
		WithMaxRecords(maxRecords).WithIdleTimeBetweenReadsInMillis(int(time.Second / time.Millisecond)).
		WithShardSyncIntervalMillis(50).
		WithLogger(kcllog.NewLogrusLogger(quiet))
	kc := kinesis.NewFromConfig(emulator.Config(), func(o *kinesis.Options) {
		o.BaseEndpoint = aws.String(kinesisURL)
		o.APIOptions = append(o.APIOptions, (&listShardsCache{hits: cachedListShards}).add)
	})
	w := kclworker.NewWorker(peerFactory{n: count}, cfg).WithKinesis(kc)
	return w, w.Start()
}

// listShardsCache answers a whole-stream ListShards from the first such
// answer, in the client's middleware stack, before any request is built.
type listShardsCache struct {
	mu     sync.Mutex
	answer *kinesis.ListShardsOutput
	hits   *atomic.Int64
}

func (c *listShardsCache) add(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("peerListShardsCache",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			req, ok := in.Parameters.(*kinesis.ListShardsInput)
			if !ok || req.NextToken != nil {
				return next.HandleInitialize(ctx, in)
			}
			c.mu.Lock()
			cached := c.answer
			c.mu.Unlock()
			if cached != nil {
				c.hits.Add(1)
				return middleware.InitializeOutput{Result: cached}, middleware.Metadata{}, nil
			}
			out, md, err := next.HandleInitialize(ctx, in)
			if res, ok := out.Result.(*kinesis.ListShardsOutput); ok && err == nil && res.NextToken == nil {
				c.mu.Lock()
				c.answer = res
				c.mu.Unlock()
			}
			return out, md, err
		}), middleware.Before)
}
