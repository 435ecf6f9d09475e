package ddbmodel

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/leasecore"
)

// IndexOp is the operation name under which Stats.WriteUnitsByOp counts
// the writes DynamoDB makes to the table's global secondary indexes.
const IndexOp = "Index"

// indexWriteUnits is what a table write from old to next (nil: absent)
// costs the indexes, as DynamoDB bills a global secondary index: a write
// that puts an item into an index costs one index write, one that removes
// it one, one that changes the index's key (a new leaseOwner for
// LeaseOwnerToLeaseKeyIndex) two, a delete and a put; a write that leaves
// the index's keys as they were costs nothing, since a KEYS_ONLY index
// holds nothing else (the table's key never changes). Each index write is
// priced on the projected item's size, 1 KB units: one unit for a lease.
// A failed conditional write writes nothing to an index.
func (m *Model) indexWriteUnits(old, next map[string]types.AttributeValue) float64 {
	var u float64
	for _, idx := range m.cfg.Indexes {
		ok, _ := indexKey(idx, old)
		nk, _ := indexKey(idx, next)
		switch {
		case ok != "" && nk != "" && ok == nk:
		case ok != "" && nk != "":
			u += writeUnits(projectedSize(m.cfg.HashKey, idx, old)) + writeUnits(projectedSize(m.cfg.HashKey, idx, next))
		case ok != "":
			u += writeUnits(projectedSize(m.cfg.HashKey, idx, old))
		case nk != "":
			u += writeUnits(projectedSize(m.cfg.HashKey, idx, next))
		}
	}
	return u
}

// indexKey is the item's key in idx ("" when the item is not in it: both
// the index's hash and range attributes must be strings present).
func indexKey(idx Index, item map[string]types.AttributeValue) (string, bool) {
	h, ok1 := item[idx.HashKey].(*types.AttributeValueMemberS)
	r, ok2 := item[idx.RangeKey].(*types.AttributeValueMemberS)
	if !ok1 || !ok2 {
		return "", false
	}
	return h.Value + "\x00" + r.Value, true
}

func projectedSize(tableKey string, idx Index, item map[string]types.AttributeValue) int {
	return leasecore.ItemSize(map[string]types.AttributeValue{tableKey: item[tableKey], idx.HashKey: item[idx.HashKey], idx.RangeKey: item[idx.RangeKey]})
}

// accountIndex books the index writes of one table write.
func (m *Model) accountIndex(old, next map[string]types.AttributeValue) {
	if len(m.cfg.Indexes) == 0 {
		return
	}
	if u := m.indexWriteUnits(old, next); u > 0 {
		m.stats.IndexWriteUnits += u
		m.account(IndexOp, 0, u, m.clock.Now())
	}
}
