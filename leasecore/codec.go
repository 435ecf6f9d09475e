package leasecore

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Attribute names of a lease item, spelled exactly as KCL's
// DynamoDBLeaseSerializer and DynamoDBMultiStreamLeaseSerializer spell them
// (docs/kcl-compat.md, Attributes). Exported so that code building
// UpdateItem/Expected maps uses the same spelling as the codec.
const (
	AttrLeaseKey                           = "leaseKey"
	AttrLeaseOwner                         = "leaseOwner"
	AttrLeaseCounter                       = "leaseCounter"
	AttrOwnerSwitchesSinceCheckpoint       = "ownerSwitchesSinceCheckpoint"
	AttrCheckpoint                         = "checkpoint"
	AttrCheckpointSubSequenceNumber        = "checkpointSubSequenceNumber"
	AttrPendingCheckpoint                  = "pendingCheckpoint"
	AttrPendingCheckpointSubSequenceNumber = "pendingCheckpointSubSequenceNumber"
	AttrPendingCheckpointState             = "pendingCheckpointState"
	AttrParentShardID                      = "parentShardId" // singular, although it is a set
	AttrChildShardIDs                      = "childShardIds"
	AttrStartingHashKey                    = "startingHashKey"
	AttrEndingHashKey                      = "endingHashKey"
	AttrThroughputKBps                     = "throughputKBps"
	AttrCheckpointOwner                    = "checkpointOwner"
	AttrEntityType                         = "entityType"
	AttrStreamName                         = "streamName" // multi-stream only
	AttrShardID                            = "shardId"    // multi-stream only
)

// EntityTypeLease is the entityType KCL 3.5+ writes on leases it creates.
// Leases created by older versions have no entityType at all.
const EntityTypeLease = "LEASE"

// knownAttrs are the attributes DecodeLease consumes into typed fields.
// Everything else lands in Lease.Extra.
var knownAttrs = map[string]bool{
	AttrLeaseKey: true, AttrLeaseOwner: true, AttrLeaseCounter: true,
	AttrOwnerSwitchesSinceCheckpoint: true, AttrCheckpoint: true,
	AttrCheckpointSubSequenceNumber: true, AttrPendingCheckpoint: true,
	AttrPendingCheckpointSubSequenceNumber: true, AttrPendingCheckpointState: true,
	AttrParentShardID: true, AttrChildShardIDs: true, AttrStartingHashKey: true,
	AttrEndingHashKey: true, AttrThroughputKBps: true, AttrCheckpointOwner: true,
	AttrEntityType: true, AttrStreamName: true, AttrShardID: true,
}

// MalformedError says why one item could not be decoded as a lease. It is per
// item on purpose: a lister should warn and carry on rather than fail the whole
// table the way KCL 2.x's list() does (docs/kcl-compat.md, KCL 3.x items).
type MalformedError struct {
	LeaseKey string // empty when the item has no usable leaseKey
	Attr     string // attribute at fault
	Reason   string // e.g. "missing", "has type S, want N"
}

func (e *MalformedError) Error() string {
	if e.LeaseKey == "" {
		return fmt.Sprintf("lease item: %s %s", e.Attr, e.Reason)
	}
	return fmt.Sprintf("lease %q: %s %s", e.LeaseKey, e.Attr, e.Reason)
}

// NotLeaseError is returned by DecodeLease for items that KCL 3.5+ keeps in
// the lease table but that are not leases (leader lock, migration state,
// worker metrics, stream info). Listers should test IsLeaseItem first and
// show such items separately; this error only guards callers that forget.
type NotLeaseError struct {
	LeaseKey   string
	EntityType string // as EntityTypeOf reports it
}

func (e *NotLeaseError) Error() string {
	return fmt.Sprintf("item %q is not a lease (entityType %q)", e.LeaseKey, e.EntityType)
}

// IsLeaseItem reports whether KCL would deserialize item as a lease:
// entityType absent or exactly "LEASE". Anything else (another string, an
// empty string, another type) is skipped by KCL 3.5+'s list().
func IsLeaseItem(item map[string]types.AttributeValue) bool {
	av, ok := item[AttrEntityType]
	if !ok || isNilAV(av) {
		return true
	}
	s, ok := av.(*types.AttributeValueMemberS)
	return ok && s.Value == EntityTypeLease
}

// ItemKey returns the leaseKey string of any item in a lease table, or ""
// if it has none, so warnings and non-lease listings can name the item.
func ItemKey(item map[string]types.AttributeValue) string {
	if s, ok := item[AttrLeaseKey].(*types.AttributeValueMemberS); ok && s != nil {
		return s.Value
	}
	return ""
}

// EntityTypeOf returns the entityType string of an item, or "" when it is
// absent or not of type S.
func EntityTypeOf(item map[string]types.AttributeValue) string {
	if s, ok := item[AttrEntityType].(*types.AttributeValueMemberS); ok && s != nil {
		return s.Value
	}
	return ""
}

// DecodeLease reads a lease item the way KCL's serializers do, but stricter
// where KCL would crash later (NPE on missing counters, IllegalArgument on a
// non-numeric checkpoint): such items give a *MalformedError. Non-lease items
// give a *NotLeaseError.
//
// Empty strings are read as absent, as KCL's Strings.isNullOrEmpty checks do.
// Attributes the codec does not know are kept in Extra. Two known attributes
// that KCL itself ignores are also kept in Extra rather than dropped, so a
// re-encode loses nothing: pendingCheckpointSubSequenceNumber without a
// pendingCheckpoint, and pendingCheckpointState of type N (the create-path
// quirk in toDynamoRecord, docs/kcl-compat.md, Attributes).
func DecodeLease(item map[string]types.AttributeValue) (Lease, error) {
	if !IsLeaseItem(item) {
		return Lease{}, &NotLeaseError{LeaseKey: ItemKey(item), EntityType: EntityTypeOf(item)}
	}
	d := itemDecoder{item: item}
	var l Lease

	key, ok := d.str(AttrLeaseKey)
	if d.err != nil {
		return Lease{}, d.err
	}
	if !ok || key == "" {
		reason := "missing"
		if ok {
			reason = "is empty"
		}
		return Lease{}, &MalformedError{Attr: AttrLeaseKey, Reason: reason}
	}
	d.key = key
	l.LeaseKey = key

	l.LeaseOwner, _ = d.str(AttrLeaseOwner)
	l.LeaseCounter = d.requiredInt(AttrLeaseCounter)
	l.OwnerSwitchesSinceCheckpoint = d.requiredInt(AttrOwnerSwitchesSinceCheckpoint)
	if cp, ok := d.str(AttrCheckpoint); ok {
		l.Checkpoint.SequenceNumber = cp
	} else {
		d.fail(AttrCheckpoint, "missing")
	}
	l.Checkpoint.SubSequenceNumber, _ = d.int(AttrCheckpointSubSequenceNumber)

	if pcp, _ := d.str(AttrPendingCheckpoint); pcp != "" {
		sub, _ := d.int(AttrPendingCheckpointSubSequenceNumber)
		l.PendingCheckpoint = &SequenceNumber{SequenceNumber: pcp, SubSequenceNumber: sub}
	} else if av, ok := item[AttrPendingCheckpointSubSequenceNumber]; ok {
		d.keep(AttrPendingCheckpointSubSequenceNumber, av)
	}

	switch v := item[AttrPendingCheckpointState].(type) {
	case nil:
	case *types.AttributeValueMemberB:
		if v != nil && v.Value != nil {
			l.PendingCheckpointState = append([]byte{}, v.Value...)
		}
	case *types.AttributeValueMemberN:
		d.keep(AttrPendingCheckpointState, v)
	default:
		d.typeMismatch(AttrPendingCheckpointState, v, "B")
	}

	l.ParentShardIDs = d.strSet(AttrParentShardID)
	l.ChildShardIDs = d.strSet(AttrChildShardIDs)
	l.StartingHashKey, _ = d.str(AttrStartingHashKey)
	l.EndingHashKey, _ = d.str(AttrEndingHashKey)
	if n, ok := d.num(AttrThroughputKBps); ok {
		f, err := parseDynamoFloat(n)
		if err != nil {
			d.fail(AttrThroughputKBps, err.Error())
		}
		l.ThroughputKBps = &f
	}
	l.CheckpointOwner, _ = d.str(AttrCheckpointOwner)
	l.EntityType, _ = d.str(AttrEntityType)
	l.StreamName, _ = d.str(AttrStreamName)
	l.ShardID, _ = d.str(AttrShardID)

	for name, av := range item {
		if !knownAttrs[name] {
			d.keep(name, av)
		}
	}
	if d.err != nil {
		return Lease{}, d.err
	}
	l.Extra = d.extra
	if err := l.Validate(); err != nil {
		return Lease{}, err
	}
	return l, nil
}

// EncodeLease writes a lease item exactly as KCL's toDynamoRecord (and the
// multi-stream serializer) would: leaseKey, leaseCounter,
// ownerSwitchesSinceCheckpoint, checkpoint and checkpointSubSequenceNumber
// always; everything else only when set. It never writes an empty S or an
// empty SS, because KCL's DynamoUtils refuses to and older readers were never
// tested against them; empty members are dropped from sets for the same
// reason. Extra attributes are written back unchanged, but typed fields win
// over an Extra entry of the same name.
//
// entityType is written only if the Lease carries it: a lease read without
// one was created by KCL < 3.5 and must stay that way.
//
// EncodeLease does not validate; call Lease.Validate before writing a lease
// built by hand. A zero LeaseKey or Checkpoint is omitted (never written as
// an empty string), which DynamoDB or DecodeLease will then reject.
func EncodeLease(l Lease) map[string]types.AttributeValue {
	item := make(map[string]types.AttributeValue, len(l.Extra)+len(knownAttrs))
	for name, av := range l.Extra {
		item[name] = av
	}
	putS := func(name, v string) {
		if v != "" {
			item[name] = &types.AttributeValueMemberS{Value: v}
		}
	}
	putN := func(name string, v int64) {
		item[name] = &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
	}
	putSS := func(name string, v []string) {
		set := make([]string, 0, len(v))
		for _, s := range v {
			if s != "" {
				set = append(set, s)
			}
		}
		if len(set) > 0 {
			item[name] = &types.AttributeValueMemberSS{Value: set}
		}
	}

	putS(AttrLeaseKey, l.LeaseKey)
	putS(AttrLeaseOwner, l.LeaseOwner)
	putN(AttrLeaseCounter, l.LeaseCounter)
	putN(AttrOwnerSwitchesSinceCheckpoint, l.OwnerSwitchesSinceCheckpoint)
	putS(AttrCheckpoint, l.Checkpoint.SequenceNumber)
	putN(AttrCheckpointSubSequenceNumber, l.Checkpoint.SubSequenceNumber)
	if p := l.PendingCheckpoint; p != nil && p.SequenceNumber != "" {
		putS(AttrPendingCheckpoint, p.SequenceNumber)
		putN(AttrPendingCheckpointSubSequenceNumber, p.SubSequenceNumber)
	}
	// Written as B, the way updateLease writes it. toDynamoRecord's quirk of
	// putting the sub-sequence number (N) here would destroy the state.
	if l.PendingCheckpointState != nil {
		item[AttrPendingCheckpointState] = &types.AttributeValueMemberB{Value: append([]byte{}, l.PendingCheckpointState...)}
	}
	putSS(AttrParentShardID, l.ParentShardIDs)
	putSS(AttrChildShardIDs, l.ChildShardIDs)
	putS(AttrStartingHashKey, l.StartingHashKey)
	putS(AttrEndingHashKey, l.EndingHashKey)
	// DynamoDB cannot store NaN or infinities, so they are omitted.
	if t := l.ThroughputKBps; t != nil && !math.IsNaN(*t) && !math.IsInf(*t, 0) {
		item[AttrThroughputKBps] = &types.AttributeValueMemberN{Value: formatDynamoFloat(*t)}
	}
	putS(AttrCheckpointOwner, l.CheckpointOwner)
	putS(AttrEntityType, l.EntityType)
	putS(AttrStreamName, l.StreamName)
	putS(AttrShardID, l.ShardID)
	return item
}

// itemDecoder reads typed attributes and remembers the first error, so
// DecodeLease reads as a flat list of fields.
type itemDecoder struct {
	item  map[string]types.AttributeValue
	key   string
	err   error
	extra map[string]types.AttributeValue
}

func (d *itemDecoder) fail(attr, reason string) {
	if d.err == nil {
		d.err = &MalformedError{LeaseKey: d.key, Attr: attr, Reason: reason}
	}
}

func (d *itemDecoder) typeMismatch(attr string, av types.AttributeValue, want string) {
	d.fail(attr, fmt.Sprintf("has type %s, want %s", typeTag(av), want))
}

func (d *itemDecoder) keep(name string, av types.AttributeValue) {
	if d.extra == nil {
		d.extra = make(map[string]types.AttributeValue)
	}
	d.extra[name] = av
}

// get returns the attribute, treating a nil value like an absent one.
func (d *itemDecoder) get(name string) (types.AttributeValue, bool) {
	av, ok := d.item[name]
	if !ok || isNilAV(av) {
		return nil, false
	}
	return av, true
}

func (d *itemDecoder) str(name string) (string, bool) {
	av, ok := d.get(name)
	if !ok {
		return "", false
	}
	s, ok := av.(*types.AttributeValueMemberS)
	if !ok {
		d.typeMismatch(name, av, "S")
		return "", false
	}
	return s.Value, true
}

func (d *itemDecoder) num(name string) (string, bool) {
	av, ok := d.get(name)
	if !ok {
		return "", false
	}
	n, ok := av.(*types.AttributeValueMemberN)
	if !ok {
		d.typeMismatch(name, av, "N")
		return "", false
	}
	return n.Value, true
}

func (d *itemDecoder) int(name string) (int64, bool) {
	n, ok := d.num(name)
	if !ok {
		return 0, false
	}
	v, err := parseDynamoInt(n)
	if err != nil {
		d.fail(name, err.Error())
		return 0, false
	}
	return v, true
}

func (d *itemDecoder) requiredInt(name string) int64 {
	if _, ok := d.get(name); !ok {
		d.fail(name, "missing")
		return 0
	}
	v, _ := d.int(name)
	return v
}

// strSet reads an SS. An empty set is read as absent (nil) so that decoding
// what EncodeLease wrote gives back an equal Lease.
func (d *itemDecoder) strSet(name string) []string {
	av, ok := d.get(name)
	if !ok {
		return nil
	}
	ss, ok := av.(*types.AttributeValueMemberSS)
	if !ok {
		d.typeMismatch(name, av, "SS")
		return nil
	}
	if len(ss.Value) == 0 {
		return nil
	}
	return append([]string(nil), ss.Value...)
}

// ParseMultiStreamKey splits a multi-stream lease key
// "<account>:<stream>:<creationEpoch>:<shardId>" the way KCL's StreamInfo
// does (split(":", 4), first three parts form the stream identifier). ok is
// false for single-stream keys and for keys whose stream identifier KCL's
// StreamIdentifier.multiStreamInstance would reject.
func ParseMultiStreamKey(leaseKey string) (streamID, shardID string, ok bool) {
	// Most keys are single-stream shard ids: no split, no allocation
	// (listings call this for every lease, several times).
	if strings.IndexByte(leaseKey, ':') < 0 {
		return "", "", false
	}
	parts := strings.SplitN(leaseKey, ":", 4)
	if len(parts) != 4 || parts[3] == "" {
		return "", "", false
	}
	streamID = strings.Join(parts[:3], ":")
	if !ValidStreamIdentifier(streamID) {
		return "", "", false
	}
	return streamID, parts[3], true
}

// parseDynamoInt parses a DynamoDB number that must be an exact int64.
// KCL writes Long.toString, but numbers come back normalised by DynamoDB and
// hand-made items may use any DynamoDB spelling ("1.0E7", "-0", "12.0"), so
// anything whose value is an integer is accepted. The value is computed on
// the decimal digits, never through float64, so 19-digit values stay exact.
func parseDynamoInt(s string) (int64, error) {
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return v, nil
	}
	dec, ok := parseDecimal(s)
	if !ok {
		return 0, fmt.Errorf("%s is not a number", quoteShort(s))
	}
	if dec.digits == "" {
		return 0, nil
	}
	if dec.exp < 0 {
		return 0, fmt.Errorf("%s is not an integer", quoteShort(s))
	}
	// 19 digits is the most an int64 can have; the bound also keeps the
	// zero padding below small whatever exponent was given.
	if int64(len(dec.digits))+dec.exp > 19 {
		return 0, fmt.Errorf("%s is out of int64 range", quoteShort(s))
	}
	text := dec.digits + strings.Repeat("0", int(dec.exp))
	if dec.neg {
		text = "-" + text
	}
	v, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s is out of int64 range", quoteShort(s))
	}
	return v, nil
}

// parseDynamoFloat parses a DynamoDB number into a float64 (throughputKBps is
// a Java Double). The syntax is checked first because strconv.ParseFloat
// also accepts "NaN", "Inf" and hex floats, which DynamoDB never returns.
func parseDynamoFloat(s string) (float64, error) {
	if _, ok := parseDecimal(s); !ok {
		return 0, fmt.Errorf("%s is not a number", quoteShort(s))
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && (math.IsInf(f, 0) || math.IsNaN(f)) {
		return 0, fmt.Errorf("%s is out of float64 range", quoteShort(s))
	}
	return f, nil
}

// formatDynamoFloat formats a float64 for an N attribute: shortest
// round-tripping decimal, no exponent (KCL rounds throughput to 6 decimals,
// so this reproduces what it wrote, e.g. "12.345678").
func formatDynamoFloat(f float64) string {
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// decimal is a parsed DynamoDB number: (-1 if neg) * digits * 10^exp, with
// digits free of leading and trailing zeros ("" means zero).
type decimal struct {
	neg    bool
	digits string
	exp    int64
}

// maxExpDigits bounds the exponent we evaluate exactly; anything larger is
// far outside int64 (or below 1) whatever the mantissa, and refusing to
// evaluate it keeps hostile input such as "1e999999999999" cheap.
const maxExpDigits = 15

// parseDecimal parses the number syntax DynamoDB (Java BigDecimal) accepts:
// [+-] digits [. digits] [(e|E) [+-] digits], with at least one mantissa
// digit on either side of the point. No spaces, no NaN/Infinity.
func parseDecimal(s string) (decimal, bool) {
	var d decimal
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		d.neg = s[i] == '-'
		i++
	}
	start := i
	for i < len(s) && isDigitByte(s[i]) {
		i++
	}
	intPart := s[start:i]
	var frac string
	if i < len(s) && s[i] == '.' {
		i++
		fs := i
		for i < len(s) && isDigitByte(s[i]) {
			i++
		}
		frac = s[fs:i]
	}
	if intPart == "" && frac == "" {
		return decimal{}, false
	}
	var exp int64
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		es := i
		for i < len(s) && isDigitByte(s[i]) {
			i++
		}
		if es == i {
			return decimal{}, false
		}
		ed := trimLeadingZeros(s[es:i])
		if len(ed) > maxExpDigits {
			exp = 1e16 // clamped: see maxExpDigits
		} else {
			exp, _ = strconv.ParseInt(ed, 10, 64)
		}
		if eneg {
			exp = -exp
		}
	}
	if i != len(s) {
		return decimal{}, false
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	if digits == "" {
		return decimal{neg: d.neg}, true
	}
	exp -= int64(len(frac))
	trimmed := strings.TrimRight(digits, "0")
	exp += int64(len(digits) - len(trimmed))
	d.digits = trimmed
	d.exp = exp
	return d, true
}

func isDigitByte(c byte) bool { return c >= '0' && c <= '9' }

// quoteShort quotes a value for an error message, cut short so a hostile or
// corrupt item cannot produce a megabyte-long warning line.
func quoteShort(s string) string {
	const max = 64
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
}
