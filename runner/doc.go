// Package runner is the consumer side of kcltool (`kcltool run`; see
// docs/run.md and docs/handler.md): the worker and the shard lifecycle.
//
// A Worker holds leases through the lease coordinator (leasecore) and runs
// one shardRun per held shard. The shardRun is the lifecycle, as the KCL's
// lifecycle package is: it waits for the shard's parents, reads the shard
// from its checkpoint (reader.go: polling with retrieval's Fetcher, or
// enhanced fan-out, efo_*.go), shapes the pages into batches (batcher) and
// hands them to a processor.RecordProcessor (a process per batch, or a
// MultiLang child), whose checkpoints it writes conditioned on the holding
// it read for; it stops the handler at the lease's deadline, and at the
// shard's end has the processor checkpoint SHARD_END. Lease writes are
// leasecore's and reshard's: the runner calls reshard for shard sync, child
// leases at shard end, parent gating and cleanup.
//
// Its sub-packages are the parts the lifecycle drives, and import nothing
// of it:
//
//   - retrieval: how a shard is read (Page, the polling Fetcher);
//   - processor: how records are handed over (the handler protocols);
//   - metrics: the worker's figures (Prometheus, CloudWatch).
//
// The fan-out reader stays here, as bounded efo_*.go files: it drives the
// worker's consumer registration and asks the worker's shard listing.
package runner
