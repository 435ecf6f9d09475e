// Package leasecore holds the KCL lease model, the codec that reads and writes
// lease items exactly as the Java KCL 2.x and 3.x serializers do, and the lease
// protocol (create, renew, take, steal, release, checkpoint).
package leasecore

import "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

// Lease is one lease item of a KCL lease table. Field names follow the KCL
// attribute names; see ../shared/kcl/compat.md section 2.
type Lease struct {
	LeaseKey                     string
	LeaseOwner                   string // empty means unassigned
	LeaseCounter                 int64
	OwnerSwitchesSinceCheckpoint int64
	Checkpoint                   SequenceNumber
	PendingCheckpoint            *SequenceNumber // nil when absent
	PendingCheckpointState       []byte          // nil when absent
	ParentShardIDs               []string        // attribute parentShardId (singular), SS
	ChildShardIDs                []string        // attribute childShardIds, SS
	StartingHashKey              string          // decimal string, empty when unknown
	EndingHashKey                string          // decimal string, empty when unknown
	ThroughputKBps               *float64        // KCL 3.x, nil when absent
	CheckpointOwner              string          // KCL 3.x graceful handoff, empty when absent
	EntityType                   string          // KCL 3.5+ "LEASE"; empty when absent
	StreamName                   string          // multi-stream: serialized stream identifier
	ShardID                      string          // multi-stream: raw shard id

	// Extra keeps attributes this version of kcltool does not know, so that
	// export and re-encode never drop data a newer KCL wrote.
	Extra map[string]types.AttributeValue
}

// SequenceNumber is KCL's ExtendedSequenceNumber: a sequence number or
// sentinel plus the KPL sub-sequence number.
type SequenceNumber struct {
	SequenceNumber    string
	SubSequenceNumber int64
}
