// Package reset moves KCL checkpoints on purpose: it plans a reset (to
// TRIM_HORIZON, LATEST, a point in time, a sequence number or positions read
// from a file), an export of a lease table and an import of one, and applies
// a plan with conditional writes only.
//
// Planning reads and never writes. A time resolves, shard by shard and along
// the shard lineage, to the exact sequence number after which the first
// record at or after that time comes; the AT_TIMESTAMP sentinel is never
// written, because a Java KCL worker takes the timestamp from its own
// configuration, not from the lease (docs/kcl-compat.md, Sentinel
// checkpoints). Leases of parents that were cleaned up after SHARD_END are
// recreated when the time is before the reshard, so that parents are
// replayed before their children again.
//
// Applying checks first that the application is stopped (no lease counter
// moves during a sample window), saves a backup of the whole table through
// the caller, and then writes each change on the condition that the lease
// is still exactly as the plan read it. A lease that changed in between is
// reported and skipped, never overwritten. With Force the writes go to a
// live application: each is conditioned on the counter just read and bumps
// it, and removes the owner, so the worker holding the lease loses it and
// its successor starts from the new checkpoint.
package reset
