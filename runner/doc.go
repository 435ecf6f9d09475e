// Package runner is the consumer side of kcltool: it turns the records of a
// leased shard into batches, hands each batch to a handler process, and
// decides where the shard may be checkpointed. It never writes a lease
// itself; the lease coordinator (leasecore) owns every lease write, and the
// runner only reports the positions that are safe to checkpoint.
package runner
