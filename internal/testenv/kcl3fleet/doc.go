// Package kcl3fleet is test support: a KCL 3.x fleet (leader and Java-like
// followers) on the local DynamoDB server, ported from the KCL 3.5.1 source
// and the DynamoDB lock client 1.4.0 that it depends on, because CI has no
// JVM. Every write cites the Java class.method and the v3.5.1 line numbers
// it copies; paths are under amazon-kinesis-client/src/main/java/software/
// amazon/kinesis/ (lock client: AmazonDynamoDBLockClient.java at the commit
// that set version 1.4.0, 1d3d999).
//
// The binary must never link this package (architecture_test.go,
// TestBinaryLinksNoTestSupport); only tests import it.
//
// What it holds:
//
//   - Setup creates an application's tables and coordination items in one
//     of four layouts (Kind): a new 3.5 application (everything in the lease
//     table), the 3.0-3.4 side tables (or tm INIT / DEPLOYED), tm PENDING and
//     tm COMPLETE. Fleet.SetClientVersion flips cv as the KCL's migration
//     tool does; Fleet.CreateLeases writes leases as the shard sync does.
//   - Leader: the leader lock as lock client 1.4.0 takes, heartbeats and
//     releases it; the exact assignLease and initiateGracefulLeaseHandoff
//     writes of DynamoDBLeaseRefresher; and Run, a LeaseAssignmentManager
//     round every interval.
//   - OtherWorker: a Java-like 3.x follower (metrics item, index discovery,
//     3.x renewal, handoff completion) that records when it processed which
//     lease, so that tests can check that no two workers overlap.
//
// Where this port is simpler than the KCL (say so when a test relies on it):
//
//   - Leader assignment: LeaseAssignmentManager.performAssignment gives
//     expired or unassigned leases to active workers, oldest counter
//     increment first, as VarianceBasedLeaseAssignmentDecider does; but the
//     worker chosen is the active worker with the fewest leases (ties by
//     worker id), not the one with the most spare CPU or throughput
//     (computePercentageToReachAverage). There is no variance balancing
//     (balanceWorkerVariance), no maxLeasesForWorker or throughput cap, and
//     no stale-metrics deletion. Rebalancing is only what a test forces with
//     Leader.RequestHandoff.
//   - Leader election: the lock is taken only when it is absent, as
//     DynamoDBLockBasedLeaderDecider.isLeader does in practice (lock client
//     1.4.0 issue #1803: getLock never reports a lock read from the table as
//     expired, so a dead leader's lock is never taken over). A stalled
//     leader's lock stays until a test deletes or releases it.
//   - Leader and lock state live in memory: a Leader that is stopped and
//     rebuilt starts with no knowledge of earlier rounds, as a new leader
//     (prepareAfterLeaderSwitch) does.
//   - OtherWorker reads no stream: "processing" a lease means holding it
//     with no checkpointOwner. It checkpoints nothing, never writes
//     throughputKBps (LeaseStatsRecorder) and reports no CPU (a worker off
//     EC2, ECS and EKS: empty sts and opr, which WorkerMetricStats treats as
//     the default throughput metric). It handles the handoff at once (after
//     HandoffDelay), like a shard consumer with no batch in flight.
//   - Times are taken from an injected clock (internal/clock); the lease
//     expiry of the leader is judged, as in the KCL, by the counter's last
//     change seen by the leader, never by a timestamp in the item.
package kcl3fleet
