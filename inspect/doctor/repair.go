package doctor

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/shellquote"
	"github.com/kcltool/kcltool/leasecore"
)

// LeaseRepair says how to make one malformed lease item readable again.
type LeaseRepair struct {
	Key     string
	Problem string // why the item does not decode, as read
	// Repaired is the item with its attributes converted to the KCL's
	// types; nil when a value cannot be recovered (Unrecoverable says why).
	Repaired      map[string]types.AttributeValue
	Changes       []string // one line per converted attribute
	Unrecoverable string
	// Command is the aws CLI command that applies the repair: a
	// conditional put-item of Repaired, or, when the item cannot be
	// repaired, a conditional delete-item after which shard sync creates
	// the lease afresh.
	Command string
}

// kclTypes are the attribute types the KCL's serializers write; a value of
// another type makes the lease unreadable.
var kclTypes = map[string]string{
	leasecore.AttrLeaseOwner:                         "S",
	leasecore.AttrCheckpoint:                         "S",
	leasecore.AttrPendingCheckpoint:                  "S",
	leasecore.AttrStartingHashKey:                    "S",
	leasecore.AttrEndingHashKey:                      "S",
	leasecore.AttrCheckpointOwner:                    "S",
	leasecore.AttrStreamName:                         "S",
	leasecore.AttrShardID:                            "S",
	leasecore.AttrLeaseCounter:                       "int",
	leasecore.AttrOwnerSwitchesSinceCheckpoint:       "int",
	leasecore.AttrCheckpointSubSequenceNumber:        "int",
	leasecore.AttrPendingCheckpointSubSequenceNumber: "int",
	leasecore.AttrThroughputKBps:                     "float",
	leasecore.AttrParentShardID:                      "SS",
	leasecore.AttrChildShardIDs:                      "SS",
	leasecore.AttrPendingCheckpointState:             "B",
}

// RepairLeaseItem works out the repair of a lease item that does not decode.
// A value is converted only where it is recoverable as it stands: a number
// written as a string (leaseCounter S "7" becomes N "7"), a sequence number
// written as a number, one shard id written as S or a list where a string
// set belongs. A missing leaseCounter or ownerSwitchesSinceCheckpoint
// becomes N "0": any counter serves, and the KCL starts at 0. A checkpoint
// that is missing or not a sequence number is not guessed at.
func RepairLeaseItem(table string, item map[string]types.AttributeValue) LeaseRepair {
	r := LeaseRepair{Key: leasecore.ItemKey(item)}
	fixed := make(map[string]types.AttributeValue, len(item))
	for k, v := range item {
		fixed[k] = v
	}
	var changed []string
	for range len(item) + len(kclTypes) + 1 {
		_, err := leasecore.DecodeLease(fixed)
		if err == nil {
			r.Repaired = fixed
			r.Command = putItemCommand(table, item, fixed, changed)
			return r
		}
		if r.Problem == "" {
			r.Problem = err.Error()
		}
		var me *leasecore.MalformedError
		if !errors.As(err, &me) || me.LeaseKey == "" {
			r.Unrecoverable = err.Error()
			break
		}
		av, present := fixed[me.Attr]
		nv, ok := convertAttr(me.Attr, av, present && !isNullAV(av))
		if me.Attr == leasecore.AttrStreamName {
			// The KCL writes the key as streamName + ":" + shardId, so a
			// key of that shape gives the identifier back; nothing else does.
			nv, ok = streamNameFromKey(r.Key)
		}
		if !ok || slices.Contains(changed, me.Attr) {
			if present && !isNullAV(av) {
				r.Unrecoverable = fmt.Sprintf("%s %s, and its value cannot be converted to the KCL's type without guessing", me.Attr, me.Reason)
			} else {
				r.Unrecoverable = fmt.Sprintf("%s is missing, and there is nothing to recover it from", me.Attr)
			}
			break
		}
		fixed[me.Attr] = nv
		changed = append(changed, me.Attr)
		r.Changes = append(r.Changes, fmt.Sprintf("%s: %s -> %s", me.Attr, avText(av, present), avText(nv, true)))
	}
	if r.Unrecoverable == "" {
		r.Unrecoverable = r.Problem
	}
	r.Changes = nil
	if r.Key != "" {
		r.Command = deleteItemCommand(table, item)
	}
	return r
}

// streamNameFromKey is the stream identifier a multi-stream lease key
// starts with.
func streamNameFromKey(key string) (types.AttributeValue, bool) {
	id, _, ok := leasecore.ParseMultiStreamKey(key)
	if !ok {
		return nil, false
	}
	return &types.AttributeValueMemberS{Value: id}, true
}

// convertAttr converts one attribute to the type the KCL wants, if its
// value survives the conversion unchanged.
func convertAttr(attr string, av types.AttributeValue, present bool) (types.AttributeValue, bool) {
	want := kclTypes[attr]
	if !present {
		if want == "int" && (attr == leasecore.AttrLeaseCounter || attr == leasecore.AttrOwnerSwitchesSinceCheckpoint) {
			return &types.AttributeValueMemberN{Value: "0"}, true
		}
		return nil, false
	}
	one, isOne := singleString(av)
	switch want {
	case "S":
		if !isOne || one == "" {
			return nil, false
		}
		switch attr {
		case leasecore.AttrCheckpoint, leasecore.AttrPendingCheckpoint:
			if !leasecore.ValidCheckpoint(one) {
				return nil, false
			}
		case leasecore.AttrStartingHashKey, leasecore.AttrEndingHashKey:
			if !allDigits(one) {
				return nil, false
			}
		}
		return &types.AttributeValueMemberS{Value: one}, true
	case "int":
		if !isOne {
			return nil, false
		}
		v, err := strconv.ParseInt(strings.TrimSpace(one), 10, 64)
		if err != nil {
			return nil, false
		}
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}, true
	case "float":
		if !isOne {
			return nil, false
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(one), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, false
		}
		return &types.AttributeValueMemberN{Value: strconv.FormatFloat(f, 'g', -1, 64)}, true
	case "SS":
		var ids []string
		switch v := av.(type) {
		case *types.AttributeValueMemberS:
			ids = []string{v.Value}
		case *types.AttributeValueMemberL:
			for _, e := range v.Value {
				s, ok := e.(*types.AttributeValueMemberS)
				if !ok {
					return nil, false
				}
				if !slices.Contains(ids, s.Value) {
					ids = append(ids, s.Value)
				}
			}
		default:
			return nil, false
		}
		if len(ids) == 0 || slices.Contains(ids, "") {
			return nil, false
		}
		return &types.AttributeValueMemberSS{Value: ids}, true
	case "B":
		s, ok := av.(*types.AttributeValueMemberS)
		if !ok {
			return nil, false
		}
		b, err := base64.StdEncoding.DecodeString(s.Value)
		if err != nil {
			return nil, false
		}
		return &types.AttributeValueMemberB{Value: b}, true
	}
	return nil, false
}

// singleString is the one scalar a value holds: an S or N as text, or the
// only member of a string set or of a list of one S or N.
func singleString(av types.AttributeValue) (string, bool) {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return v.Value, true
	case *types.AttributeValueMemberN:
		return v.Value, true
	case *types.AttributeValueMemberSS:
		if len(v.Value) == 1 {
			return v.Value[0], true
		}
	case *types.AttributeValueMemberL:
		if len(v.Value) == 1 {
			switch e := v.Value[0].(type) {
			case *types.AttributeValueMemberS:
				return e.Value, true
			case *types.AttributeValueMemberN:
				return e.Value, true
			}
		}
	}
	return "", false
}

// guard is the condition of a repair write: the item still exists and is
// still as read, as far as the KCL can tell. Every KCL write of a lease
// (renew, take, checkpoint, release) changes leaseCounter, so an unchanged
// counter means no worker wrote the item since; the repaired attributes
// unchanged means no one repaired it by hand meanwhile either.
func guard(orig map[string]types.AttributeValue, attrs []string) (cond string, names map[string]string, values map[string]types.AttributeValue) {
	names = map[string]string{"#k": leasecore.AttrLeaseKey}
	values = map[string]types.AttributeValue{}
	parts := []string{"attribute_exists(#k)"}
	if !slices.Contains(attrs, leasecore.AttrLeaseCounter) {
		attrs = append([]string{leasecore.AttrLeaseCounter}, attrs...)
	}
	for i, a := range attrs {
		n, v := fmt.Sprintf("#a%d", i), fmt.Sprintf(":a%d", i)
		names[n] = a
		if av, ok := orig[a]; ok {
			parts = append(parts, n+" = "+v)
			values[v] = av
		} else {
			parts = append(parts, "attribute_not_exists("+n+")")
		}
	}
	return strings.Join(parts, " AND "), names, values
}

func putItemCommand(table string, orig, fixed map[string]types.AttributeValue, changed []string) string {
	cond, names, values := guard(orig, changed)
	item, _ := leasecore.MarshalItemJSON(fixed)
	return "aws dynamodb put-item --table-name " + shellquote.Quote(table) + " --item " + shellquote.Quote(string(item)) +
		conditionFlags(cond, names, values)
}

func deleteItemCommand(table string, orig map[string]types.AttributeValue) string {
	cond, names, values := guard(orig, nil)
	key, _ := leasecore.MarshalItemJSON(map[string]types.AttributeValue{leasecore.AttrLeaseKey: orig[leasecore.AttrLeaseKey]})
	return "aws dynamodb delete-item --table-name " + shellquote.Quote(table) + " --key " + shellquote.Quote(string(key)) +
		conditionFlags(cond, names, values)
}

func conditionFlags(cond string, names map[string]string, values map[string]types.AttributeValue) string {
	out := " --condition-expression " + shellquote.Quote(cond)
	n, _ := json.Marshal(names) // map keys come out sorted
	out += " --expression-attribute-names " + shellquote.Quote(string(n))
	if len(values) > 0 {
		v, _ := leasecore.MarshalItemJSON(values)
		out += " --expression-attribute-values " + shellquote.Quote(string(v))
	}
	return out
}

// avText shows a value with its type, as DynamoDB JSON: N "7", S "7".
func avText(av types.AttributeValue, present bool) string {
	if !present {
		return "missing"
	}
	b, err := leasecore.MarshalItemJSON(map[string]types.AttributeValue{"v": av})
	if err != nil {
		return "?"
	}
	var m map[string]map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return string(b)
	}
	for tag, raw := range m["v"] {
		return tag + " " + string(raw)
	}
	return string(b)
}

func isNullAV(av types.AttributeValue) bool {
	_, ok := av.(*types.AttributeValueMemberNULL)
	return ok || av == nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// sortItemsByKey orders raw items by leaseKey, for stable output.
func sortItemsByKey(items []map[string]types.AttributeValue) {
	sort.Slice(items, func(i, j int) bool { return leasecore.ItemKey(items[i]) < leasecore.ItemKey(items[j]) })
}
