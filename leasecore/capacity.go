package leasecore

import (
	"context"
	"errors"
	"math"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/awserr"
)

// DynamoDB bills and throttles capacity units, not requests (docs/run.md,
// Capacity units). Every lease-table call asks for its consumed capacity
// (ReturnConsumedCapacity TOTAL) and is counted here from the answer; where
// there is no answer to read (a conditional write that failed: DynamoDB
// charges it, but its error carries no ConsumedCapacity) the units are
// estimated from item sizes, with DynamoDB's rules:
//
//   - a read unit is 4 KB of items read, half a unit when eventually
//     consistent; a Scan page rounds the sum of its items' sizes, a GetItem
//     its one item (an absent item costs one unit too);
//   - a write unit is 1 KB of the larger of the item before and after;
//   - an item's size is the sum of its attributes' names and values
//     (ItemSize).
//
// A throttled request consumed nothing. A request whose answer was lost
// (timeout, reset) is not counted: whether it was applied is unknown.

// The operations capacity is counted under: the metric label op.
const (
	OpRenew      = "renew"
	OpTake       = "take"
	OpSteal      = "steal"
	OpCheckpoint = "checkpoint"
	OpRelease    = "release"
	OpScan       = "scan"       // the taker's scans
	OpShardSync  = "shard_sync" // lease creation, shard end, its reads
	OpCleanup    = "cleanup"    // deletion of finished parents
	OpOther      = "other"      // start-up checks, reads back after a failed shard run
	OpDiscover   = "discover"   // KCL 3.x: the index query and reads of the leases it names
	OpHandoff    = "handoff"    // KCL 3.x: the write that completes a graceful handoff
	// The KCL 3.x leader's assignment run (coordination/assignment).
	OpLeaderScan   = "leader_scan"   // its scan of the lease table and of the metrics side table
	OpAssign       = "assign"        // assignLease: unassigned, expired, timed-out handoffs
	OpHandoffStart = "handoff_start" // initiateGracefulLeaseHandoff
)

const (
	readUnitBytes  = 4 << 10
	writeUnitBytes = 1 << 10
)

// Units are read and write capacity units.
type Units struct {
	Read, Write float64
}

// Plus adds v to u.
func (u Units) Plus(v Units) Units { return Units{Read: u.Read + v.Read, Write: u.Write + v.Write} }

// Capacity accumulates consumed capacity units per operation. The zero
// value is ready; it is safe for concurrent use.
type Capacity struct {
	mu        sync.Mutex
	ops       map[string]Units
	estimated Units
}

// Add counts u under op.
func (c *Capacity) Add(op string, u Units) {
	if c == nil || u == (Units{}) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ops == nil {
		c.ops = map[string]Units{}
	}
	c.ops[op] = c.ops[op].Plus(u)
}

func (c *Capacity) addEstimate(op string, u Units) {
	if c == nil {
		return
	}
	c.Add(op, u)
	c.mu.Lock()
	c.estimated = c.estimated.Plus(u)
	c.mu.Unlock()
}

// ByOp returns the units counted so far, by operation.
func (c *Capacity) ByOp() map[string]Units {
	out := map[string]Units{}
	if c == nil {
		return out
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for op, u := range c.ops {
		out[op] = u
	}
	return out
}

// Total is the sum over every operation.
func (c *Capacity) Total() Units {
	var t Units
	for _, u := range c.ByOp() {
		t = t.Plus(u)
	}
	return t
}

// Estimated is the part of Total that was estimated from item sizes rather
// than read from DynamoDB's answers.
func (c *Capacity) Estimated() Units {
	if c == nil {
		return Units{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.estimated
}

// CapacityOps lists the operations in a map of units, sorted, for output.
func CapacityOps(m map[string]Units) []string {
	ops := make([]string, 0, len(m))
	for op := range m {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	return ops
}

// takeOp is the operation a take counts under.
func takeOp(steal bool) string {
	if steal {
		return OpSteal
	}
	return OpTake
}

type capacityOpKey struct{}

// WithCapacityOp makes the lease-table calls made under ctx count under op.
func WithCapacityOp(ctx context.Context, op string) context.Context {
	return context.WithValue(ctx, capacityOpKey{}, op)
}

// CapacityOpOf is the operation ctx's calls count under (OpOther when unset).
func CapacityOpOf(ctx context.Context) string {
	if op, ok := ctx.Value(capacityOpKey{}).(string); ok {
		return op
	}
	return OpOther
}

// RecordScan counts one Scan page.
func (c *Capacity) RecordScan(ctx context.Context, in *dynamodb.ScanInput, out *dynamodb.ScanOutput, err error) {
	if c == nil || err != nil || out == nil {
		return
	}
	if u, ok := consumed(out.ConsumedCapacity, true); ok {
		c.Add(CapacityOpOf(ctx), u)
		return
	}
	c.addEstimate(CapacityOpOf(ctx), Units{Read: pageReadUnits(aws.ToBool(in.ConsistentRead), out)})
}

// pageReadUnits is what one Scan page cost: the answer's figure, or the
// estimate from its items.
func pageReadUnits(consistent bool, out *dynamodb.ScanOutput) float64 {
	if u, ok := consumed(out.ConsumedCapacity, true); ok {
		return u.Read
	}
	size := 0
	for _, item := range out.Items {
		size += ItemSize(item)
	}
	return ReadUnits(size, consistent)
}

// RecordQuery counts one Query page (of the KEYS_ONLY index: eventually
// consistent, its projected items' sizes when estimated).
func (c *Capacity) RecordQuery(ctx context.Context, in *dynamodb.QueryInput, out *dynamodb.QueryOutput, err error) {
	if c == nil || err != nil || out == nil {
		return
	}
	if u, ok := consumed(out.ConsumedCapacity, true); ok {
		c.Add(CapacityOpOf(ctx), u)
		return
	}
	size := 0
	for _, item := range out.Items {
		size += ItemSize(item)
	}
	c.addEstimate(CapacityOpOf(ctx), Units{Read: ReadUnits(size, aws.ToBool(in.ConsistentRead))})
}

// RecordGetItem counts one GetItem.
func (c *Capacity) RecordGetItem(ctx context.Context, in *dynamodb.GetItemInput, out *dynamodb.GetItemOutput, err error) {
	if c == nil || err != nil || out == nil {
		return
	}
	if u, ok := consumed(out.ConsumedCapacity, true); ok {
		c.Add(CapacityOpOf(ctx), u)
		return
	}
	c.addEstimate(CapacityOpOf(ctx), Units{Read: ReadUnits(ItemSize(out.Item), aws.ToBool(in.ConsistentRead))})
}

// RecordUpdateItem counts one UpdateItem.
func (c *Capacity) RecordUpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, out *dynamodb.UpdateItemOutput, err error) {
	if c == nil {
		return
	}
	var cc *types.ConsumedCapacity
	var item map[string]types.AttributeValue
	if out != nil {
		cc, item = out.ConsumedCapacity, out.Attributes
	}
	c.recordWrite(ctx, cc, err, item, in.Key, in.ExpressionAttributeValues)
}

// RecordPutItem counts one PutItem.
func (c *Capacity) RecordPutItem(ctx context.Context, in *dynamodb.PutItemInput, out *dynamodb.PutItemOutput, err error) {
	if c == nil {
		return
	}
	var cc *types.ConsumedCapacity
	if out != nil {
		cc = out.ConsumedCapacity
	}
	c.recordWrite(ctx, cc, err, in.Item, nil, nil)
}

// RecordDeleteItem counts one DeleteItem.
func (c *Capacity) RecordDeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, out *dynamodb.DeleteItemOutput, err error) {
	if c == nil {
		return
	}
	var cc *types.ConsumedCapacity
	var item map[string]types.AttributeValue
	if out != nil {
		cc, item = out.ConsumedCapacity, out.Attributes
	}
	c.recordWrite(ctx, cc, err, item, in.Key, nil)
}

// recordWrite counts a write from its answer, or estimates it: item is
// the item written or returned when known, otherwise the key and the
// values sent are a lower bound of it. Lease items are far below 1 KB, so
// the estimate is one unit in practice.
func (c *Capacity) recordWrite(ctx context.Context, cc *types.ConsumedCapacity, err error, item, key, values map[string]types.AttributeValue) {
	switch {
	case err == nil:
		if u, ok := consumed(cc, false); ok {
			c.Add(CapacityOpOf(ctx), u)
			return
		}
	case !awserr.ConditionFailed(err):
		return // throttled (nothing consumed) or outcome unknown
	}
	size := ItemSize(item)
	if size == 0 {
		size = ItemSize(key)
		for _, v := range values {
			size += attributeSize(v)
		}
	}
	c.addEstimate(CapacityOpOf(ctx), Units{Write: WriteUnits(size)})
}

// consumed reads an answer's ConsumedCapacity: CapacityUnits are read units
// for a read and write units for a write; the split figures win when given.
func consumed(cc *types.ConsumedCapacity, read bool) (Units, bool) {
	if cc == nil {
		return Units{}, false
	}
	if cc.ReadCapacityUnits != nil || cc.WriteCapacityUnits != nil {
		return Units{Read: aws.ToFloat64(cc.ReadCapacityUnits), Write: aws.ToFloat64(cc.WriteCapacityUnits)}, true
	}
	if cc.CapacityUnits == nil {
		return Units{}, false
	}
	if read {
		return Units{Read: *cc.CapacityUnits}, true
	}
	return Units{Write: *cc.CapacityUnits}, true
}

// ReadUnits is what reading size bytes of items costs: 4 KB a unit, rounded
// up, at least one; half for an eventually consistent read.
func ReadUnits(size int, consistent bool) float64 {
	u := max(math.Ceil(float64(size)/readUnitBytes), 1)
	if !consistent {
		u /= 2
	}
	return u
}

// WriteUnits is what writing an item of size bytes costs: 1 KB a unit,
// rounded up, at least one.
func WriteUnits(size int) float64 { return max(math.Ceil(float64(size)/writeUnitBytes), 1) }

// ItemSize is an item's size as DynamoDB counts it for capacity: each
// attribute's name (UTF-8 bytes) plus its value's size.
func ItemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + attributeSize(v)
	}
	return n
}

// attributeSize is a value's size: strings their UTF-8 bytes, binaries
// their bytes, numbers about one byte per two significant digits plus one,
// booleans and nulls one byte, sets the sum of their elements, lists and
// maps 3 bytes plus one per element plus the elements (and, for maps,
// their names).
func attributeSize(av types.AttributeValue) int {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numberSize(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += numberSize(s)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + attributeSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for name, e := range v.Value {
			n += 1 + len(name) + attributeSize(e)
		}
		return n
	}
	return 0
}

// numberSize follows DynamoDB's number encoding: the significant digits
// (leading and trailing zeros trimmed) in pairs aligned on the decimal
// point, one byte per pair, plus one byte of exponent, plus one for a
// negative number. Anything that is not a number counts its length.
func numberSize(s string) int {
	neg := strings.HasPrefix(s, "-")
	mant, exp := strings.TrimLeft(s, "+-"), 0
	if i := strings.IndexAny(mant, "eE"); i >= 0 {
		e, err := parseExp(mant[i+1:])
		if err != nil {
			return utf8.RuneCountInString(s)
		}
		mant, exp = mant[:i], e
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	// exp10 is the power of ten of the first digit.
	exp10 := len(intPart) - 1 + exp
	trimmed := strings.TrimLeft(digits, "0")
	exp10 -= len(digits) - len(trimmed)
	trimmed = strings.TrimRight(trimmed, "0")
	n := len(trimmed)
	if n == 0 {
		return 1
	}
	size := 1 + (n+1)/2
	if n%2 == 0 && exp10%2 == 0 {
		size++ // an even run of digits that starts mid-pair spans one more pair
	}
	if neg {
		size++
	}
	return size
}

func parseExp(s string) (int, error) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimLeft(s, "+-")
	if s == "" || len(s) > 6 {
		return 0, errors.New("bad exponent")
	}
	e := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, errors.New("bad exponent")
		}
		e = e*10 + int(c-'0')
	}
	if neg {
		e = -e
	}
	return e, nil
}
