// Package ddbmodel is an in-process model of one DynamoDB lease table, for
// simulations of a whole fleet of lease workers on a fake clock
// (internal/testenv/fleetsim). It answers the calls leasecore's coordinator, its
// taker and renewer and the shard sync make (GetItem, PutItem, UpdateItem,
// DeleteItem, Scan, and Query of a KEYS_ONLY index for KCL 3.x's
// discovery) with the SDK's own input, output and error types, and
// honours what decides a lease fleet's behaviour and its bill:
//
//   - condition expressions, as far as the lease protocol uses them (see
//     expr.go), applied atomically per item;
//   - Scan pages of at most 1 MB of items (or Limit items), with
//     ExclusiveStartKey and LastEvaluatedKey, and parallel segments;
//   - consumed capacity as DynamoDB computes it: a read unit per 4 KB
//     (rounded up per item for GetItem, per page for Scan), half of that for
//     eventually consistent reads; a write unit per 1 KB of the larger of
//     the item before and after, a failed conditional write included;
//   - provisioned throughput: a token bucket per direction refilled at the
//     configured units per second that keeps up to 300 seconds of unused
//     capacity (DynamoDB's burst), answering
//     ProvisionedThroughputExceededException once it is empty.
//
// Time comes from an injected clock, so it runs on the tests' fake clock.
// docs/scale.md lists what it does not model.
package ddbmodel

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aws/smithy-go"
	"github.com/kcltool/kcltool/leasecore"
)

// Clock is where the model reads time (clock.Clock's Now).
type Clock interface{ Now() time.Time }

// Config sets up a table.
type Config struct {
	// Table is the table's name; calls naming another table get
	// ResourceNotFoundException.
	Table string
	// HashKey is the partition key attribute (leaseKey for a lease table).
	HashKey string
	// ReadCapacity and WriteCapacity are the provisioned units per second.
	// Zero means on-demand: nothing is throttled.
	ReadCapacity, WriteCapacity float64
	// InitialBurst is how many seconds of unused capacity the table starts
	// with (at most 300). Zero: one second's worth.
	InitialBurst float64
	// PageBytes is the Scan page limit, 1 MB when zero (tests shrink it).
	PageBytes int
	// Indexes are the table's global secondary indexes (KEYS_ONLY), which
	// Query reads (query.go).
	Indexes []Index
}

// BurstSeconds is how much unused capacity DynamoDB keeps for bursts.
const BurstSeconds = 300

// Model is one table. It is safe for concurrent use.
type Model struct {
	cfg   Config
	clock Clock

	mu    sync.Mutex
	items map[string]map[string]types.AttributeValue
	sizes map[string]int // ItemSize of each item, computed once per write
	keys  []string       // sorted: the Scan order
	owner map[string]int
	read  bucket
	write bucket
	stats Stats
	// per-second consumption, for peaks
	second           int64
	secRead, secWrit float64

	condCache   map[string]cond
	updateCache map[string][]updateAction
}

// Stats are the model's counters since it was created (or Reset).
type Stats struct {
	ReadUnits, WriteUnits float64
	// PeakReadPerSecond and PeakWritePerSecond are the most units consumed
	// in one second of the clock.
	PeakReadPerSecond, PeakWritePerSecond float64
	// Requests and Throttled count calls by operation.
	Requests, Throttled map[string]int64
	// ReadUnitsByOp and WriteUnitsByOp split the units by operation.
	ReadUnitsByOp, WriteUnitsByOp map[string]float64
	ConditionFailed               int64
	// IndexWriteUnits is the part of WriteUnits written to the global
	// secondary indexes (WriteUnitsByOp[IndexOp]; indexwrites.go).
	IndexWriteUnits float64
}

// New returns an empty table.
func New(cfg Config, clock Clock) *Model {
	if cfg.HashKey == "" {
		cfg.HashKey = "leaseKey"
	}
	if cfg.PageBytes <= 0 {
		cfg.PageBytes = 1 << 20
	}
	m := &Model{cfg: cfg, clock: clock, items: map[string]map[string]types.AttributeValue{}, sizes: map[string]int{}, owner: map[string]int{},
		condCache: map[string]cond{}, updateCache: map[string][]updateAction{}}
	now := clock.Now()
	burst := cfg.InitialBurst
	if burst <= 0 {
		burst = 1
	}
	m.read = newBucket(cfg.ReadCapacity, min(burst, BurstSeconds), now)
	m.write = newBucket(cfg.WriteCapacity, min(burst, BurstSeconds), now)
	m.resetStats()
	return m
}

func (m *Model) resetStats() {
	m.stats = Stats{Requests: map[string]int64{}, Throttled: map[string]int64{},
		ReadUnitsByOp: map[string]float64{}, WriteUnitsByOp: map[string]float64{}}
	m.secRead, m.secWrit = 0, 0
}

// Stats returns a copy of the counters.
func (m *Model) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.stats
	s.Requests, s.Throttled = maps(s.Requests), maps(s.Throttled)
	s.ReadUnitsByOp, s.WriteUnitsByOp = mapsF(s.ReadUnitsByOp), mapsF(s.WriteUnitsByOp)
	s.PeakReadPerSecond = max(s.PeakReadPerSecond, m.secRead)
	s.PeakWritePerSecond = max(s.PeakWritePerSecond, m.secWrit)
	return s
}

// ResetStats zeroes the counters (not the buckets), to start a measuring window.
func (m *Model) ResetStats() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.resetStats()
}

// SetCapacity changes the provisioned capacity (0: on-demand) from now on.
func (m *Model) SetCapacity(read, write float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	m.read.set(read, now)
	m.write.set(write, now)
}

// SetOtherTraffic adds the table's other traffic from now on: requests of
// one unit each, arriving evenly at read and write per second, served or
// throttled like the lease protocol's own (checkpoints of the fleet's
// handlers, an operator's scripts). They only take capacity: they change no
// item and are not in Stats but in OtherTraffic.
func (m *Model) SetOtherTraffic(read, write float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	m.read.loadRate, m.read.loadNext = read, now
	m.write.loadRate, m.write.loadNext = write, now
}

// OtherTraffic reports how many of the other traffic's requests were served
// and throttled.
func (m *Model) OtherTraffic() (readServed, readThrottled, writeServed, writeThrottled int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.read.loadServed, m.read.loadRejected, m.write.loadServed, m.write.loadRejected
}

// OwnerCounts returns how many items have each leaseOwner ("" for none).
func (m *Model) OwnerCounts() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps(m.owner)
}

// Len is the number of items.
func (m *Model) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.items)
}

// Keys returns the items' keys in Scan order.
func (m *Model) Keys() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.keys)
}

// Item returns the stored item (not a copy: items are never changed in
// place, a write stores a new map).
func (m *Model) Item(key string) map[string]types.AttributeValue {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.items[key]
}

func maps[K comparable, V any](in map[K]V) map[K]V {
	out := make(map[K]V, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

func mapsF(in map[string]float64) map[string]float64 { return maps(in) }

// --- errors, typed as the SDK types them -------------------------------

func opErr(op string, err error) error {
	return &smithy.OperationError{ServiceID: "DynamoDB", OperationName: op, Err: err}
}

type validationError struct{ msg string }

func (e *validationError) Error() string                 { return "ValidationException: " + e.msg }
func (e *validationError) ErrorCode() string             { return "ValidationException" }
func (e *validationError) ErrorMessage() string          { return e.msg }
func (e *validationError) ErrorFault() smithy.ErrorFault { return smithy.FaultClient }

func validation(msg string) error { return &validationError{msg: msg} }

func throttled() error {
	return &types.ProvisionedThroughputExceededException{Message: aws.String(
		"The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API.")}
}

func conditionFailed(old map[string]types.AttributeValue, rv types.ReturnValuesOnConditionCheckFailure) error {
	e := &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
	if rv == types.ReturnValuesOnConditionCheckFailureAllOld {
		e.Item = old
	}
	return e
}

// --- capacity ----------------------------------------------------------

// bucket is DynamoDB's throttle as documented: capacity accrues at rate per
// second and up to BurstSeconds of it is kept. A request is admitted while
// the bucket is not empty and then pays its units, which may take it below
// zero (a 1 MB Scan page is admitted on a nearly empty bucket, and the debt
// is paid off before the next request is admitted).
type bucket struct {
	rate, tokens float64
	at           time.Time
	// other traffic on the table (see Model.SetOtherTraffic): one-unit
	// requests arriving evenly at loadRate per second, each admitted or
	// throttled like any request, never retried.
	loadRate                 float64
	loadNext                 time.Time
	loadServed, loadRejected int64
}

func newBucket(rate, seconds float64, now time.Time) bucket {
	return bucket{rate: rate, tokens: rate * seconds, at: now}
}

func (b *bucket) refill(now time.Time) {
	if b.rate <= 0 || !now.After(b.at) {
		return
	}
	b.tokens = min(b.tokens+now.Sub(b.at).Seconds()*b.rate, b.rate*BurstSeconds)
	b.at = now
}

func (b *bucket) set(rate float64, now time.Time) {
	b.refill(now)
	b.at = now // an on-demand table accrues nothing: the new rate counts from now
	b.rate = rate
	b.tokens = min(b.tokens, rate*BurstSeconds)
}

// admit reports whether a request may run now, after the other traffic
// that arrived before it has had its turn.
func (b *bucket) admit(now time.Time) bool {
	if b.rate <= 0 {
		return true
	}
	if b.loadRate > 0 {
		step := time.Duration(float64(time.Second) / b.loadRate)
		for !b.loadNext.After(now) {
			b.refill(b.loadNext)
			if b.tokens > 0 {
				b.tokens--
				b.loadServed++
			} else {
				b.loadRejected++
			}
			b.loadNext = b.loadNext.Add(step)
		}
	}
	b.refill(now)
	return b.tokens > 0
}

func (b *bucket) pay(units float64) {
	if b.rate > 0 {
		b.tokens -= units
	}
}

// readUnits is the read capacity of size bytes: 4 KB units, rounded up,
// at least one; half for an eventually consistent read.
func readUnits(size int, consistent bool) float64 {
	u := math.Max(1, math.Ceil(float64(size)/4096))
	if !consistent {
		u /= 2
	}
	return u
}

// writeUnits is the write capacity of an item of size bytes: 1 KB units,
// rounded up, at least one.
func writeUnits(size int) float64 { return math.Max(1, math.Ceil(float64(size)/1024)) }

func (m *Model) account(op string, read, write float64, now time.Time) {
	m.read.pay(read)
	m.write.pay(write)
	m.stats.ReadUnits += read
	m.stats.WriteUnits += write
	m.stats.ReadUnitsByOp[op] += read
	m.stats.WriteUnitsByOp[op] += write
	sec := now.Unix()
	if sec != m.second {
		m.stats.PeakReadPerSecond = max(m.stats.PeakReadPerSecond, m.secRead)
		m.stats.PeakWritePerSecond = max(m.stats.PeakWritePerSecond, m.secWrit)
		m.second, m.secRead, m.secWrit = sec, 0, 0
	}
	m.secRead += read
	m.secWrit += write
}

func consumed(table string, read, write float64, rc types.ReturnConsumedCapacity) *types.ConsumedCapacity {
	if rc != types.ReturnConsumedCapacityTotal && rc != types.ReturnConsumedCapacityIndexes {
		return nil
	}
	cc := &types.ConsumedCapacity{TableName: aws.String(table), CapacityUnits: aws.Float64(read + write)}
	if read > 0 {
		cc.ReadCapacityUnits = aws.Float64(read)
	}
	if write > 0 {
		cc.WriteCapacityUnits = aws.Float64(write)
	}
	if rc == types.ReturnConsumedCapacityIndexes {
		cc.Table = &types.Capacity{CapacityUnits: cc.CapacityUnits, ReadCapacityUnits: cc.ReadCapacityUnits, WriteCapacityUnits: cc.WriteCapacityUnits}
	}
	return cc
}

// begin checks the table and the throttle of one request, under m.mu.
func (m *Model) begin(op, table string, reads, writes bool) error {
	m.stats.Requests[op]++
	if table != m.cfg.Table {
		return opErr(op, &types.ResourceNotFoundException{Message: aws.String("Requested resource not found")})
	}
	now := m.clock.Now()
	if (reads && !m.read.admit(now)) || (writes && !m.write.admit(now)) {
		m.stats.Throttled[op]++
		return opErr(op, throttled())
	}
	return nil
}

func (m *Model) keyOf(op string, key map[string]types.AttributeValue) (string, error) {
	v, ok := key[m.cfg.HashKey].(*types.AttributeValueMemberS)
	if !ok || len(key) != 1 || v.Value == "" {
		return "", opErr(op, validation("The provided key element does not match the schema"))
	}
	return v.Value, nil
}

// --- the calls ----------------------------------------------------------

// GetItem reads one item.
func (m *Model) GetItem(ctx context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	const op = "GetItem"
	if err := m.begin(op, aws.ToString(in.TableName), true, false); err != nil {
		return nil, err
	}
	if in.ProjectionExpression != nil || in.AttributesToGet != nil {
		return nil, opErr(op, validation("projections are not modelled"))
	}
	key, err := m.keyOf(op, in.Key)
	if err != nil {
		return nil, err
	}
	item := m.items[key]
	ru := readUnits(m.sizes[key], aws.ToBool(in.ConsistentRead))
	m.account(op, ru, 0, m.clock.Now())
	return &dynamodb.GetItemOutput{Item: item, ConsumedCapacity: consumed(m.cfg.Table, ru, 0, in.ReturnConsumedCapacity)}, nil
}

// PutItem writes a whole item, if its condition holds.
func (m *Model) PutItem(ctx context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	const op = "PutItem"
	if err := m.begin(op, aws.ToString(in.TableName), false, true); err != nil {
		return nil, err
	}
	condExpr, names, values := in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues
	if len(in.Expected) > 0 {
		if condExpr != nil {
			return nil, opErr(op, validation("Expected and ConditionExpression together"))
		}
		var err error
		if condExpr, names, values, err = legacyCondition(in.Expected, names, values); err != nil {
			return nil, opErr(op, err)
		}
	}
	key, err := m.keyOf(op, map[string]types.AttributeValue{m.cfg.HashKey: in.Item[m.cfg.HashKey]})
	if err != nil {
		return nil, err
	}
	old := m.items[key]
	wu := writeUnits(max(m.sizes[key], leasecore.ItemSize(in.Item)))
	now := m.clock.Now()
	if err := m.check(op, condExpr, names, values, old); err != nil {
		return nil, m.condErr(op, err, old, in.ReturnValuesOnConditionCheckFailure, wu, now)
	}
	m.store(key, old, clone(in.Item), leasecore.ItemSize(in.Item))
	m.account(op, 0, wu, now)
	out := &dynamodb.PutItemOutput{ConsumedCapacity: consumed(m.cfg.Table, 0, wu, in.ReturnConsumedCapacity)}
	if in.ReturnValues == types.ReturnValueAllOld {
		out.Attributes = old
	}
	return out, nil
}

// UpdateItem changes an item (creating it when absent, as DynamoDB does),
// if its condition holds.
func (m *Model) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	const op = "UpdateItem"
	if err := m.begin(op, aws.ToString(in.TableName), false, true); err != nil {
		return nil, err
	}
	condExpr, updExpr := in.ConditionExpression, in.UpdateExpression
	names, values := in.ExpressionAttributeNames, in.ExpressionAttributeValues
	if len(in.Expected) > 0 || len(in.AttributeUpdates) > 0 {
		if condExpr != nil || updExpr != nil {
			return nil, opErr(op, validation("legacy parameters and expressions together"))
		}
		var err error
		if condExpr, names, values, err = legacyCondition(in.Expected, names, values); err != nil {
			return nil, opErr(op, err)
		}
		if updExpr, names, values, err = legacyUpdate(in.AttributeUpdates, names, values); err != nil {
			return nil, opErr(op, err)
		}
	}
	key, err := m.keyOf(op, in.Key)
	if err != nil {
		return nil, err
	}
	actions, err := m.parseUpdate(aws.ToString(updExpr))
	if err != nil {
		return nil, opErr(op, err)
	}
	old := m.items[key]
	now := m.clock.Now()
	if err := m.check(op, condExpr, names, values, old); err != nil {
		return nil, m.condErr(op, err, old, in.ReturnValuesOnConditionCheckFailure, writeUnits(m.sizes[key]), now)
	}
	next := clone(old)
	if next == nil {
		next = clone(in.Key)
	}
	for _, a := range actions {
		name, err := resolveName(a.path, names)
		if err != nil {
			return nil, opErr(op, err)
		}
		if name == m.cfg.HashKey {
			return nil, opErr(op, validation("Cannot update attribute "+name+". This attribute is part of the key"))
		}
		switch a.kind {
		case "REMOVE":
			delete(next, name)
			continue
		}
		v, err := resolveValue(a.operand, values)
		if err != nil {
			return nil, opErr(op, err)
		}
		switch a.kind {
		case "SET":
			next[name] = v
		case "ADD":
			n, ok := v.(*types.AttributeValueMemberN)
			if !ok {
				return nil, opErr(op, validation("ADD of a non-number is not modelled"))
			}
			sum, err := addNumber(next[name], n)
			if err != nil {
				return nil, opErr(op, err)
			}
			next[name] = sum
		}
	}
	size := leasecore.ItemSize(next)
	wu := writeUnits(max(m.sizes[key], size))
	m.store(key, old, next, size)
	m.account(op, 0, wu, now)
	out := &dynamodb.UpdateItemOutput{ConsumedCapacity: consumed(m.cfg.Table, 0, wu, in.ReturnConsumedCapacity)}
	switch in.ReturnValues {
	case types.ReturnValueAllNew:
		out.Attributes = next
	case types.ReturnValueAllOld:
		out.Attributes = old
	case types.ReturnValueNone, "":
	default:
		return nil, opErr(op, validation("ReturnValues "+string(in.ReturnValues)+" is not modelled"))
	}
	return out, nil
}

// DeleteItem removes an item, if its condition holds.
func (m *Model) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	const op = "DeleteItem"
	if err := m.begin(op, aws.ToString(in.TableName), false, true); err != nil {
		return nil, err
	}
	key, err := m.keyOf(op, in.Key)
	if err != nil {
		return nil, err
	}
	old := m.items[key]
	wu := writeUnits(m.sizes[key])
	now := m.clock.Now()
	if err := m.check(op, in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues, old); err != nil {
		return nil, m.condErr(op, err, old, in.ReturnValuesOnConditionCheckFailure, wu, now)
	}
	if old != nil {
		m.store(key, old, nil, 0)
	}
	m.account(op, 0, wu, now)
	out := &dynamodb.DeleteItemOutput{ConsumedCapacity: consumed(m.cfg.Table, 0, wu, in.ReturnConsumedCapacity)}
	if in.ReturnValues == types.ReturnValueAllOld {
		out.Attributes = old
	}
	return out, nil
}

// Scan reads one page: items in key order from ExclusiveStartKey, up to
// Limit items or 1 MB, whichever comes first. A page is billed on the sizes
// of the items it read, rounded up to 4 KB once per page.
func (m *Model) Scan(ctx context.Context, in *dynamodb.ScanInput, _ ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	const op = "Scan"
	if err := m.begin(op, aws.ToString(in.TableName), true, false); err != nil {
		return nil, err
	}
	if in.ProjectionExpression != nil || in.ScanFilter != nil || in.AttributesToGet != nil {
		return nil, opErr(op, validation("projections and legacy filters are not modelled"))
	}
	var filter cond
	if in.FilterExpression != nil {
		var err error
		if filter, err = parseCondition(*in.FilterExpression); err != nil {
			return nil, opErr(op, err)
		}
	}
	seg, total := aws.ToInt32(in.Segment), aws.ToInt32(in.TotalSegments)
	if (in.Segment != nil) != (in.TotalSegments != nil) || (total > 0 && (seg < 0 || seg >= total)) {
		return nil, opErr(op, validation("Segment and TotalSegments must be given together, 0 <= Segment < TotalSegments"))
	}
	start := 0
	if len(in.ExclusiveStartKey) > 0 {
		k, err := m.keyOf(op, in.ExclusiveStartKey)
		if err != nil {
			return nil, err
		}
		start = sort.SearchStrings(m.keys, k)
		if start < len(m.keys) && m.keys[start] == k {
			start++
		}
	}
	// Like DynamoDB (and dynalite), a page ends once Limit items are read
	// or once it holds 1 MB or more, the item that crosses the mark
	// included; a page that ended so has a LastEvaluatedKey even when no
	// item follows, and the next call then answers an empty last page.
	limit := int(aws.ToInt32(in.Limit))
	out := &dynamodb.ScanOutput{Items: []map[string]types.AttributeValue{}}
	bytes, cut := 0, false
	for i := start; i < len(m.keys); i++ {
		k := m.keys[i]
		if total > 1 && segmentOf(k, total) != seg {
			continue
		}
		if (limit > 0 && len(out.Items) == limit) || bytes >= m.cfg.PageBytes {
			cut = true
			break
		}
		bytes += m.sizes[k]
		out.Items = append(out.Items, m.items[k])
	}
	if !cut && len(out.Items) > 0 && ((limit > 0 && len(out.Items) == limit) || bytes >= m.cfg.PageBytes) {
		cut = true
	}
	if cut {
		last := out.Items[len(out.Items)-1]
		out.LastEvaluatedKey = map[string]types.AttributeValue{m.cfg.HashKey: last[m.cfg.HashKey]}
	}
	out.Count, out.ScannedCount = int32(len(out.Items)), int32(len(out.Items))
	// A filter drops items after they are read (and billed), as DynamoDB's
	// does; the page's LastEvaluatedKey is the last item read.
	if filter != nil {
		kept := out.Items[:0:0]
		for _, item := range out.Items {
			ok, err := filter.eval(item, in.ExpressionAttributeNames, in.ExpressionAttributeValues)
			if err != nil {
				return nil, opErr(op, err)
			}
			if ok {
				kept = append(kept, item)
			}
		}
		out.Items, out.Count = kept, int32(len(kept))
	}
	ru := 0.0 // an empty page costs nothing (dynalite; DynamoDB's documentation is silent)
	if bytes > 0 {
		ru = readUnits(bytes, aws.ToBool(in.ConsistentRead))
	}
	m.account(op, ru, 0, m.clock.Now())
	out.ConsumedCapacity = consumed(m.cfg.Table, ru, 0, in.ReturnConsumedCapacity)
	return out, nil
}

func segmentOf(key string, total int32) int32 {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int32(h.Sum32() % uint32(total))
}

// --- helpers, under m.mu -----------------------------------------------------

func (m *Model) check(op string, expr *string, names map[string]string, values map[string]types.AttributeValue, item map[string]types.AttributeValue) error {
	if expr == nil {
		return nil
	}
	c, ok := m.condCache[*expr]
	if !ok {
		var err error
		if c, err = parseCondition(*expr); err != nil {
			return opErr(op, err)
		}
		m.condCache[*expr] = c
	}
	holds, err := c.eval(item, names, values)
	if err != nil {
		return opErr(op, err)
	}
	if !holds {
		return errConditionFailed
	}
	return nil
}

var errConditionFailed = fmt.Errorf("condition failed")

// condErr answers a write whose condition did not hold: DynamoDB bills it
// like the write it would have been.
func (m *Model) condErr(op string, err error, old map[string]types.AttributeValue, rv types.ReturnValuesOnConditionCheckFailure, wu float64, now time.Time) error {
	if err == errConditionFailed {
		m.stats.ConditionFailed++
		m.account(op, 0, wu, now)
		return opErr(op, conditionFailed(old, rv))
	}
	return err
}

func (m *Model) parseUpdate(expr string) ([]updateAction, error) {
	if a, ok := m.updateCache[expr]; ok {
		return a, nil
	}
	a, err := parseUpdate(expr)
	if err == nil {
		m.updateCache[expr] = a
	}
	return a, err
}

func (m *Model) store(key string, old, next map[string]types.AttributeValue, size int) {
	m.accountIndex(old, next)
	if old != nil {
		m.owner[ownerOf(old)]--
		if m.owner[ownerOf(old)] == 0 {
			delete(m.owner, ownerOf(old))
		}
	} else {
		i := sort.SearchStrings(m.keys, key)
		m.keys = slices.Insert(m.keys, i, key)
	}
	if next == nil {
		delete(m.items, key)
		delete(m.sizes, key)
		i := sort.SearchStrings(m.keys, key)
		m.keys = slices.Delete(m.keys, i, i+1)
		return
	}
	m.items[key] = next
	m.sizes[key] = size
	m.owner[ownerOf(next)]++
}

func ownerOf(item map[string]types.AttributeValue) string {
	if s, ok := item["leaseOwner"].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

func clone(item map[string]types.AttributeValue) map[string]types.AttributeValue {
	if item == nil {
		return nil
	}
	out := make(map[string]types.AttributeValue, len(item)+2)
	for k, v := range item {
		out[k] = v
	}
	return out
}

// DescribeTable describes the table as DynamoDB does for a lease table:
// ACTIVE, a single hash key, its billing mode and provisioned capacity,
// item count and size.
func (m *Model) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	const op = "DescribeTable"
	m.stats.Requests[op]++
	if aws.ToString(in.TableName) != m.cfg.Table {
		return nil, opErr(op, &types.ResourceNotFoundException{Message: aws.String("Requested resource not found: Table: " + aws.ToString(in.TableName) + " not found")})
	}
	size := 0
	for _, s := range m.sizes {
		size += s
	}
	d := &types.TableDescription{
		TableName:            aws.String(m.cfg.Table),
		TableArn:             aws.String("arn:aws:dynamodb:us-east-1:000000000000:table/" + m.cfg.Table),
		TableStatus:          types.TableStatusActive,
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(m.cfg.HashKey), KeyType: types.KeyTypeHash}},
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(m.cfg.HashKey), AttributeType: types.ScalarAttributeTypeS}},
		ItemCount:            aws.Int64(int64(len(m.items))),
		TableSizeBytes:       aws.Int64(int64(size)),
		BillingModeSummary:   &types.BillingModeSummary{BillingMode: types.BillingModePayPerRequest},
		ProvisionedThroughput: &types.ProvisionedThroughputDescription{
			ReadCapacityUnits: aws.Int64(0), WriteCapacityUnits: aws.Int64(0)},
	}
	if m.read.rate > 0 || m.write.rate > 0 {
		d.BillingModeSummary.BillingMode = types.BillingModeProvisioned
		d.ProvisionedThroughput.ReadCapacityUnits = aws.Int64(int64(m.read.rate))
		d.ProvisionedThroughput.WriteCapacityUnits = aws.Int64(int64(m.write.rate))
	}
	return &dynamodb.DescribeTableOutput{Table: d}, nil
}
