// Package leasecore holds the KCL lease model, the codec that reads and writes
// lease items exactly as the Java KCL 2.x and 3.x serializers do, and the lease
// protocol (create, renew, take, steal, release, checkpoint).
package leasecore

import (
	"math"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Lease is one lease item of a KCL lease table. Field names follow the KCL
// attribute names; see docs/kcl-compat.md, Attributes.
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
	// export and re-encode never drop data a newer KCL wrote. It also keeps
	// the two known attributes KCL ignores when reading (an orphan
	// pendingCheckpointSubSequenceNumber, an N-typed pendingCheckpointState);
	// see DecodeLease. EncodeLease writes Extra back, typed fields winning.
	Extra map[string]types.AttributeValue
}

// SequenceNumber is KCL's ExtendedSequenceNumber: a sequence number or
// sentinel plus the KPL sub-sequence number.
type SequenceNumber struct {
	SequenceNumber    string
	SubSequenceNumber int64
}

// Validate checks what KCL needs to read the lease back without throwing:
// a leaseKey, a checkpoint that is a sentinel or decimal digits (likewise a
// pending checkpoint), non-empty shard ids, decimal hash keys with
// start < end (HashKeyRangeForLease), a finite throughput and no entityType
// other than LEASE, and a streamName that is a stream identifier
// (ParseStreamIdentifier). DecodeLease runs it on every item; writers should run it
// before EncodeLease on a lease they built or edited.
func (l Lease) Validate() error {
	bad := func(attr, reason string) error {
		return &MalformedError{LeaseKey: l.LeaseKey, Attr: attr, Reason: reason}
	}
	if l.LeaseKey == "" {
		return bad(AttrLeaseKey, "missing")
	}
	if !ValidCheckpoint(l.Checkpoint.SequenceNumber) {
		return bad(AttrCheckpoint, quoteShort(l.Checkpoint.SequenceNumber)+" is not a sequence number or sentinel")
	}
	if p := l.PendingCheckpoint; p != nil && p.SequenceNumber != "" && !ValidCheckpoint(p.SequenceNumber) {
		return bad(AttrPendingCheckpoint, quoteShort(p.SequenceNumber)+" is not a sequence number or sentinel")
	}
	for _, set := range []struct {
		attr string
		ids  []string
	}{{AttrParentShardID, l.ParentShardIDs}, {AttrChildShardIDs, l.ChildShardIDs}} {
		for _, id := range set.ids {
			if id == "" {
				return bad(set.attr, "contains an empty shard id")
			}
		}
	}
	for _, hk := range []struct{ attr, v string }{
		{AttrStartingHashKey, l.StartingHashKey}, {AttrEndingHashKey, l.EndingHashKey},
	} {
		if hk.v != "" && !isDigits(hk.v) {
			return bad(hk.attr, quoteShort(hk.v)+" is not a decimal hash key")
		}
	}
	if l.StartingHashKey != "" && l.EndingHashKey != "" && compareDigits(l.StartingHashKey, l.EndingHashKey) >= 0 {
		return bad(AttrEndingHashKey, quoteShort(l.EndingHashKey)+" is not greater than startingHashKey "+quoteShort(l.StartingHashKey))
	}
	if t := l.ThroughputKBps; t != nil && (math.IsNaN(*t) || math.IsInf(*t, 0)) {
		return bad(AttrThroughputKBps, "is not a finite number")
	}
	if l.EntityType != "" && l.EntityType != EntityTypeLease {
		return bad(AttrEntityType, quoteShort(l.EntityType)+" is not "+EntityTypeLease)
	}
	// The KCL parses streamName when it builds the shard's consumer and
	// fails there; every reader here would take the lease for another
	// stream, or none.
	if _, _, err := l.MultiStream(); err != nil {
		return err
	}
	return nil
}

// ShardIDOrKey returns the raw Kinesis shard id of the lease: ShardID for a
// multi-stream lease, otherwise the lease key (which is the shard id in
// single-stream mode). A multi-stream key whose shardId attribute is missing
// is split the way KCL splits it.
func (l Lease) ShardIDOrKey() string {
	if l.ShardID != "" {
		return l.ShardID
	}
	if _, shard, ok := ParseMultiStreamKey(l.LeaseKey); ok {
		return shard
	}
	return l.LeaseKey
}

// ParentLeaseKeys returns the lease keys of the parent shards. parentShardId
// holds raw shard ids even in multi-stream mode, so there the key is rebuilt
// as streamIdentifier + ":" + parent, like KCL's ShardInfo.getLeaseKey.
func (l Lease) ParentLeaseKeys() []string {
	if len(l.ParentShardIDs) == 0 {
		return nil
	}
	stream := l.streamID()
	keys := make([]string, len(l.ParentShardIDs))
	for i, p := range l.ParentShardIDs {
		if stream != "" {
			keys[i] = stream + ":" + p
		} else {
			keys[i] = p
		}
	}
	return keys
}

// streamID is the serialized stream identifier of a multi-stream lease ("" in
// single-stream mode): the streamName attribute, or failing that the prefix
// of the lease key.
func (l Lease) streamID() string {
	if l.StreamName != "" {
		return l.StreamName
	}
	stream, _, _ := ParseMultiStreamKey(l.LeaseKey)
	return stream
}
