// Package retrieval is how `kcltool run` reads a shard, as the KCL's
// retrieval package is: the Page a read hands to the shard's batcher
// (records de-aggregated, filtered by the lease's hash range and
// checkpoint) and the polling reader (Fetcher: GetRecords with the KCL's
// pacing, iterator renewal and backoff, and the fast decoder of its
// answers). The record model and KPL de-aggregation are kinesisrec's.
//
// Enhanced fan-out's reader stays in package runner (efo_*.go) for now:
// it re-registers the worker's stream consumer and asks the worker's shard
// listing, so it is part of the worker rather than a reader of its own.
package retrieval
