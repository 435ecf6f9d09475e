// Package coordination is where kcltool's KCL 3.x coordination will live:
// what a KCL 3.x fleet agrees on above the single lease. It is empty today;
// it makes room for the next issues, which bring the 3.x worker protocol.
//
// What will live here (docs/kcl-compat.md, KCL 3.x items):
//
//   - Leader election: the leader lock, the item "Leader" that the Java
//     KCL's DynamoDB lock client keeps in the lease table (3.5) or in the
//     <app>-CoordinatorState table (3.0 - 3.4): its owner, its lease
//     duration, the version number each heartbeat rewrites, and the rule
//     by which a contender takes a lock nobody heartbeats.
//   - Lease assignment: the leader's periodic pass that hands leases to
//     workers by load, with the assign and graceful-handoff writes (the
//     leaseOwner / checkpointOwner pair), and a worker's side of it: reading
//     its assignments through the LeaseOwnerToLeaseKeyIndex.
//   - Worker metrics: the <app>-WorkerMetricStats items each worker upserts
//     and the leader reads to tell active workers and their load.
//   - The coordinator state a migration from 2.x reads and writes (the
//     "Migration3.0" item).
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
//
// Existing code that belongs here, not moved yet: leasecore/kcl3probe.go's
// reading of the 3.x items (ProbeKCL3: the "Leader" and "Migration3.0"
// items, the companion tables) and the KCL 3.x markers beside it in
// leasecore/table.go, and the reading of the leader lock, worker metrics and
// migration state in inspect/doctor/kcl3.go. They move when 3.x work needs
// them here; ProbeKCL3 shares leasecore's table description and errors, so
// moving it is not a rename. runner/kcl3watch.go stays in runner: it is
// the 2.x worker's reaction to a 3.x fleet, and would call this package to
// read.
package coordination
