package cmd

import (
	"io"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	kclcfg "github.com/vmware/vmware-go-kcl-v2/clientlibrary/config"
	kcl "github.com/vmware/vmware-go-kcl-v2/clientlibrary/interfaces"
	kclworker "github.com/vmware/vmware-go-kcl-v2/clientlibrary/worker"
	kcllog "github.com/vmware/vmware-go-kcl-v2/logger"

	"github.com/kcltool/kcltool/internal/emulator"
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
// the idle time, which matches kcltool's, and the shard sync interval: the
// peer takes one lease per shard sync, 60s apart by default, and would
// spend minutes taking the benchmark's shards. The AWS credentials and
// region come from the environment.
func startPeer(app, stream, kinesisURL, dynamoURL string, count *atomic.Int64) (*kclworker.Worker, error) {
	quiet := logrus.New()
	quiet.SetOutput(io.Discard)
	cfg := kclcfg.NewKinesisClientLibConfig(app, stream, emulator.Region, "peer").
		WithKinesisEndpoint(kinesisURL).WithDynamoDBEndpoint(dynamoURL).
		WithInitialPositionInStream(kclcfg.TRIM_HORIZON).
		WithMaxRecords(10000).WithIdleTimeBetweenReadsInMillis(int(time.Second / time.Millisecond)).
		WithShardSyncIntervalMillis(50).
		WithLogger(kcllog.NewLogrusLogger(quiet))
	w := kclworker.NewWorker(peerFactory{n: count}, cfg)
	return w, w.Start()
}
