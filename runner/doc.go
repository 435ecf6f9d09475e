// Package runner is the consumer side of kcltool (`kcltool run`; see
// docs/run.md and docs/handler.md).
//
// A Worker holds leases through the lease coordinator (leasecore), runs one
// reader per held shard (fetcher: GetRecords with KCL's pacing and restart
// rules; the record model, KPL de-aggregation and the checkpoint filter are
// kinesisrec's), shapes the records into batches (batcher) and hands each
// batch to a handler process through a failure Policy, which decides where
// the shard may be checkpointed. Lease writes are leasecore's and reshard's: the
// runner checkpoints through the coordinator, conditioned on the holding it
// read for, and calls reshard for shard sync, child leases at shard end,
// parent gating and cleanup.
package runner
