package ddbmodel

import (
	"context"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/leasecore"
)

// Index is a global secondary index with the KEYS_ONLY projection, as
// KCL 3.x's LeaseOwnerToLeaseKeyIndex (hash leaseOwner, range leaseKey).
type Index struct {
	Name, HashKey, RangeKey string
}

// Query answers a query of a global secondary index (Config.Indexes) whose
// key condition is "hash = :value": the items with that value, in range key
// order, projected to the table's key and the index's keys, in pages of at
// most Limit items or 1 MB of projected items. Reads of an index are
// eventually consistent only (ConsistentRead is a ValidationException, as
// in DynamoDB) and billed on the projected items' size: 4 KB units,
// halved; a query that finds nothing costs nothing, as dynalite answers
// (DynamoDB's documentation is silent, as for an empty Scan page). The index
// is updated with each write: DynamoDB's propagation delay is not modelled.
func (m *Model) Query(ctx context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	const op = "Query"
	if err := m.begin(op, aws.ToString(in.TableName), true, false); err != nil {
		return nil, err
	}
	var idx *Index
	for i := range m.cfg.Indexes {
		if m.cfg.Indexes[i].Name == aws.ToString(in.IndexName) {
			idx = &m.cfg.Indexes[i]
		}
	}
	if idx == nil {
		return nil, opErr(op, validation("only a query of a global secondary index is modelled; no index "+aws.ToString(in.IndexName)))
	}
	if aws.ToBool(in.ConsistentRead) {
		return nil, opErr(op, validation("Consistent reads are not supported on global secondary indexes"))
	}
	if in.FilterExpression != nil || in.ProjectionExpression != nil || in.KeyConditions != nil || in.QueryFilter != nil || in.ScanIndexForward != nil && !*in.ScanIndexForward {
		return nil, opErr(op, validation("filters, projections, legacy conditions and backward queries are not modelled"))
	}
	c, err := parseCondition(aws.ToString(in.KeyConditionExpression))
	if err != nil {
		return nil, opErr(op, err)
	}
	eq, ok := c.(cmpCond)
	if !ok || !eq.equal {
		return nil, opErr(op, validation("only a key condition hash = :value is modelled"))
	}
	name, err := resolveName(eq.path, in.ExpressionAttributeNames)
	if err != nil {
		return nil, opErr(op, err)
	}
	if name != idx.HashKey {
		return nil, opErr(op, validation("Query condition missed key schema element: "+idx.HashKey))
	}
	want, err := resolveValue(eq.operand, in.ExpressionAttributeValues)
	if err != nil {
		return nil, opErr(op, err)
	}
	wantS, ok := want.(*types.AttributeValueMemberS)
	if !ok {
		return nil, opErr(op, validation("the index's hash key is a string"))
	}
	rangeOf := func(item map[string]types.AttributeValue) string {
		s, _ := item[idx.RangeKey].(*types.AttributeValueMemberS)
		if s == nil {
			return ""
		}
		return s.Value
	}
	var matches []map[string]types.AttributeValue
	for _, k := range m.keys {
		item := m.items[k]
		if h, ok := item[idx.HashKey].(*types.AttributeValueMemberS); ok && h.Value == wantS.Value {
			if _, ok := item[idx.RangeKey].(*types.AttributeValueMemberS); ok {
				matches = append(matches, item)
			}
		}
	}
	sort.SliceStable(matches, func(i, j int) bool { return rangeOf(matches[i]) < rangeOf(matches[j]) })
	after := ""
	if len(in.ExclusiveStartKey) > 0 {
		s, _ := in.ExclusiveStartKey[idx.RangeKey].(*types.AttributeValueMemberS)
		if s == nil {
			return nil, opErr(op, validation("ExclusiveStartKey lacks "+idx.RangeKey))
		}
		after = s.Value
	}
	limit := int(aws.ToInt32(in.Limit))
	out := &dynamodb.QueryOutput{Items: []map[string]types.AttributeValue{}}
	bytes, cut := 0, false
	for _, item := range matches {
		if after != "" && rangeOf(item) <= after {
			continue
		}
		if (limit > 0 && len(out.Items) == limit) || bytes >= m.cfg.PageBytes {
			cut = true
			break
		}
		p := map[string]types.AttributeValue{m.cfg.HashKey: item[m.cfg.HashKey], idx.HashKey: item[idx.HashKey], idx.RangeKey: item[idx.RangeKey]}
		bytes += leasecore.ItemSize(p)
		out.Items = append(out.Items, p)
	}
	// As Scan: a page that ended on Limit or 1 MB has a LastEvaluatedKey
	// even when nothing follows (dynalite does the same).
	if !cut && len(out.Items) > 0 && ((limit > 0 && len(out.Items) == limit) || bytes >= m.cfg.PageBytes) {
		cut = true
	}
	if cut {
		last := out.Items[len(out.Items)-1]
		out.LastEvaluatedKey = map[string]types.AttributeValue{m.cfg.HashKey: last[m.cfg.HashKey], idx.HashKey: last[idx.HashKey], idx.RangeKey: last[idx.RangeKey]}
	}
	out.Count, out.ScannedCount = int32(len(out.Items)), int32(len(out.Items))
	ru := 0.0 // nothing found costs nothing (dynalite; as Scan's empty page)
	if bytes > 0 {
		ru = readUnits(bytes, false)
	}
	m.account(op, ru, 0, m.clock.Now())
	out.ConsumedCapacity = consumed(m.cfg.Table, ru, 0, in.ReturnConsumedCapacity)
	return out, nil
}
