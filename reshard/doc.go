// Package reshard keeps a KCL lease table in step with a Kinesis stream's
// shards across splits and merges, by the rules of the Java KCL 2.x
// (HierarchicalShardSyncer, BlockOnParentShardTask, ShutdownTask and
// LeaseCleanupManager; docs/kcl-compat.md, SHARD_END, lineage and cleanup).
//
// A shard's life in the lease table runs through these steps, each a function
// here, and their order is what keeps records in order across a reshard:
//
//  1. Discovery: ListShards pages the full shard list, NewGraph turns it into a
//     lineage graph (parents, adjacent parents, children, hash ranges).
//  2. SyncShards creates the leases KCL's shard sync would create: on an empty
//     table one per shard at the initial position, otherwise only for open
//     shards nobody covers, or for the first missing ancestor level.
//  3. ParentsDone gates a child: it is processed only when every parent lease is
//     at SHARD_END or gone.
//  4. At the end of a shard the lease holder calls OnShardEnd, which creates the
//     child leases and writes childShardIds on the parent, and only then writes
//     the SHARD_END checkpoint itself through the leasecore checkpoint
//     operation (counter-conditioned, so only the real holder can). Children
//     first: shard sync never creates leases for children of a leased parent,
//     so a crash between a SHARD_END checkpoint and child creation would leave
//     the children without leases for good.
//  5. Cleanup deletes a finished parent lease once every child has started
//     checkpointing and the parent's own parents are gone.
//
// Leases of shards the stream no longer has are only reported (FindOrphans),
// never deleted here.
//
// The package writes leases the way KCL 2.x does and never writes entityType:
// that attribute marks a KCL 3.5 table, which kcltool refuses to work on.
package reshard
