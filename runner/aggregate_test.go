package runner

import (
	"crypto/md5"

	"google.golang.org/protobuf/encoding/protowire"
)

// userRecord is one record a KPL producer aggregates.
type userRecord struct {
	PartitionKey    string
	ExplicitHashKey string // "" for none
	Data            []byte
}

// aggregateProto encodes the AggregatedRecord protobuf for recs, with key
// tables built in first-seen order as the KPL does.
func aggregateProto(recs []userRecord) []byte {
	var pks, ehks []string
	pkIdx, ehkIdx := map[string]int{}, map[string]int{}
	var body []byte
	for _, r := range recs {
		if _, ok := pkIdx[r.PartitionKey]; !ok {
			pkIdx[r.PartitionKey] = len(pks)
			pks = append(pks, r.PartitionKey)
		}
		var sub []byte
		sub = protowire.AppendTag(sub, recPartitionKeyIndex, protowire.VarintType)
		sub = protowire.AppendVarint(sub, uint64(pkIdx[r.PartitionKey]))
		if r.ExplicitHashKey != "" {
			if _, ok := ehkIdx[r.ExplicitHashKey]; !ok {
				ehkIdx[r.ExplicitHashKey] = len(ehks)
				ehks = append(ehks, r.ExplicitHashKey)
			}
			sub = protowire.AppendTag(sub, recExplicitHashKeyIndex, protowire.VarintType)
			sub = protowire.AppendVarint(sub, uint64(ehkIdx[r.ExplicitHashKey]))
		}
		sub = protowire.AppendTag(sub, recData, protowire.BytesType)
		sub = protowire.AppendBytes(sub, r.Data)
		body = protowire.AppendTag(body, aggRecords, protowire.BytesType)
		body = protowire.AppendBytes(body, sub)
	}
	var msg []byte
	for _, pk := range pks {
		msg = protowire.AppendTag(msg, aggPartitionKeyTable, protowire.BytesType)
		msg = protowire.AppendString(msg, pk)
	}
	for _, k := range ehks {
		msg = protowire.AppendTag(msg, aggExplicitHashKeyTable, protowire.BytesType)
		msg = protowire.AppendString(msg, k)
	}
	return append(msg, body...)
}

// frame wraps a protobuf body as a KPL aggregate: magic ‖ body ‖ MD5(body).
func frame(body []byte) []byte {
	sum := md5.Sum(body)
	out := append([]byte{}, kplMagic...)
	out = append(out, body...)
	return append(out, sum[:]...)
}

// aggregate is a complete, valid KPL aggregate of recs.
func aggregate(recs ...userRecord) []byte { return frame(aggregateProto(recs)) }
