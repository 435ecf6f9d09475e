// Package metrics holds a worker's figures, as the KCL's metrics package
// does: per shard (reads, records, batches, handler runs, failures, lag,
// fan-out subscriptions) and per worker (leases, handler slots, lease-table
// capacity). The readers and the shard lifecycle of package runner record
// into a ShardStats; the Prometheus endpoint (Serve, WritePrometheus) and
// the CloudWatch publisher (KCL's metric names) read them. Time comes from
// the worker's clock (Bind).
package metrics
