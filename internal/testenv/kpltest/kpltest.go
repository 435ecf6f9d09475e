// Package kpltest builds KPL aggregated records for tests, the way the KPL
// writes them (docs/kcl-compat.md, KPL aggregation). It is its own package
// because the tests of kinesisrec (which de-aggregates) and of runner (which
// decodes GetRecords pages holding aggregates) both need valid aggregates,
// and test files cannot be shared across packages.
package kpltest

import (
	"crypto/md5"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of messages.proto (proto2), and the magic that starts an
// aggregate. kinesisrec has its own copies: a test builder that shared them
// could not catch a wrong one.
const (
	aggPartitionKeyTable    = 1
	aggExplicitHashKeyTable = 2
	aggRecords              = 3

	recPartitionKeyIndex    = 1
	recExplicitHashKeyIndex = 2
	recData                 = 3
)

var kplMagic = []byte{0xF3, 0x89, 0x9A, 0xC2}

// Record is one record a KPL producer aggregates.
type Record struct {
	PartitionKey    string
	ExplicitHashKey string // "" for none
	Data            []byte
}

// Proto encodes the AggregatedRecord protobuf for recs, with key
// tables built in first-seen order as the KPL does.
func Proto(recs []Record) []byte {
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

// Frame wraps a protobuf body as a KPL aggregate: magic ‖ body ‖ MD5(body).
func Frame(body []byte) []byte {
	sum := md5.Sum(body)
	out := append([]byte{}, kplMagic...)
	out = append(out, body...)
	return append(out, sum[:]...)
}

// Aggregate is a complete, valid KPL aggregate of recs.
func Aggregate(recs ...Record) []byte { return Frame(Proto(recs)) }
