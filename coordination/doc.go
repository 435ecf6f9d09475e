// Package coordination is kcltool's side of KCL 3.x coordination: what a
// KCL 3.x fleet agrees on above the single lease.
//
// What lives here (docs/kcl-compat.md, KCL 3.x items; KCL 3.5.1 source):
//
//   - Detect (detect.go): the mode of a lease table. The index
//     LeaseOwnerToLeaseKeyIndex, the client version (Migration3.0 cv) and
//     the table migration (TableMigration3.5 tm) decide the lease protocol
//     (taking as in 2.x, or given by the leader) and where the items live:
//     the side tables <app>-CoordinatorState and <app>-WorkerMetricStats
//     (KCL 3.0 - 3.4, tm INIT or DEPLOYED), the lease table (tm COMPLETE, or
//     a 3.5 application with no side table), or both (tm PENDING: writes to
//     the lease table, reads merged, the lock still in the side table).
//   - ReadLock and ListWorkerMetrics (read.go): the leader lock and every
//     worker's metrics item, read where the KCL reads them.
//   - Reporter (reporter.go): this worker's WorkerMetricStats item,
//     upserted every 30 s where the state says, with the KCL's CPU samplers
//     (cpusampler.go, ecssampler.go) that the cmd layer picks per platform.
//   - LeaderLock (leaderlock.go, leaderlock_writes.go): the leader
//     election on the Leader item, written as dynamodb-lock-client writes
//     it, so that Java and kcltool workers elect one leader between them.
//
// Not here: the per-lease 3.x writes (discovery, renewal with
// throughputKBps, the handoff transfer, the evict) are leasecore's
// (protocol3.go, discoverer.go); the runner applies Detect's State
// (runner/kcl3watch.go, kcl3side.go). The leader's lease assignment is
// coordination/assignment's.
//
// Why a package of its own: leasecore is the lease model and the per-lease
// protocol that a 2.x and a 3.x worker share (codec, renew, take,
// checkpoint). Coordination is a layer above it: it writes items that are
// not leases and decides ownership for the whole fleet. Kept out of
// leasecore, the lease model stays free of election and load balancing;
// kept below runner, the operator commands can read and repair the same
// items (doctor diagnosing a leader, a migration command) without the
// consumer.
//
// The import rule, checked by TestCoordinationImportRule
// (architecture_test.go):
//
//   - coordination may import leasecore, reshard and internal/... (not
//     internal/testenv outside tests);
//   - runner, inspect (inspect/doctor) and cmd (for migration) may import
//     it;
//   - leasecore never imports it, and it never imports runner, inspect,
//     reset or cmd.
//
// It is a domain package: time only from the injected clock, the
// environment from the caller, no flags in its errors
// (architecture_test.go checks it as it checks the others).
package coordination
