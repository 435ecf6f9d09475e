package leasecore

import (
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Value placeholders of the lease writes. They have fixed, meaningful names
// (rather than :v0, :v1) so that a recording test decorator can read the
// counter a write was conditioned on, and so a captured request reads like
// the KCL's Expected clause it stands for.
const (
	valExpectedCounter = ":n"     // leaseCounter the writer last read (KCL's Expected value)
	valNextCounter     = ":n1"    // leaseCounter after the write
	valOwner           = ":owner" // the writing worker
	valOne             = ":one"
	valZero            = ":zero"
	valCheckpoint      = ":cp"
	valCheckpointSub   = ":sub"
	valChildren        = ":children"
	valEntityLease     = ":lease"
	valShardEnd        = ":shardEnd"
	valStartingHashKey = ":shk"
	valEndingHashKey   = ":ehk"
	valStreamName      = ":stream"
	valShardID         = ":shard"
)

// update builds the expressions of one UpdateItem. Attribute names always go
// through placeholders (#leaseCounter etc.): several KCL attribute names are
// close to DynamoDB reserved words, and placeholders make that moot. Only
// names and values actually used are sent, because DynamoDB rejects unused
// ones.
type update struct {
	names  map[string]string
	values map[string]types.AttributeValue
	set    []string
	add    []string
	remove []string
	conds  []string
}

func newUpdate() *update {
	return &update{names: map[string]string{}, values: map[string]types.AttributeValue{}}
}

// n returns the placeholder of an attribute name. KCL attribute names are
// alphanumeric, so "#"+name is a valid placeholder.
func (u *update) n(attr string) string {
	u.names["#"+attr] = attr
	return "#" + attr
}

func (u *update) v(placeholder string, av types.AttributeValue) string {
	u.values[placeholder] = av
	return placeholder
}

func (u *update) setS(attr, placeholder, value string) {
	u.set = append(u.set, u.n(attr)+" = "+u.v(placeholder, &types.AttributeValueMemberS{Value: value}))
}

func (u *update) setN(attr, placeholder string, value int64) {
	u.set = append(u.set, u.n(attr)+" = "+u.v(placeholder, numberAV(value)))
}

func (u *update) expectCounter(counter int64) {
	u.conds = append(u.conds, u.n(AttrLeaseCounter)+" = "+u.v(valExpectedCounter, numberAV(counter)))
}

// onlyLeaseItems guards writes that are not counter-conditioned: they must
// never touch a KCL 3.x leader lock, migration record or worker-metrics item
// that shares the table (docs/kcl-compat.md, KCL 3.x items). Those have no
// leaseCounter, or an entityType other than LEASE.
func (u *update) onlyLeaseItems() {
	u.conds = append(u.conds, "attribute_exists("+u.n(AttrLeaseCounter)+")",
		"(attribute_not_exists("+u.n(AttrEntityType)+") OR "+u.n(AttrEntityType)+" = "+
			u.v(valEntityLease, &types.AttributeValueMemberS{Value: EntityTypeLease})+")")
}

func (u *update) updateExpression() string {
	var parts []string
	if len(u.set) > 0 {
		parts = append(parts, "SET "+strings.Join(u.set, ", "))
	}
	if len(u.add) > 0 {
		parts = append(parts, "ADD "+strings.Join(u.add, ", "))
	}
	if len(u.remove) > 0 {
		parts = append(parts, "REMOVE "+strings.Join(u.remove, ", "))
	}
	return strings.Join(parts, " ")
}

func (u *update) conditionExpression() string { return strings.Join(u.conds, " AND ") }

func (u *update) valuesOrNil() map[string]types.AttributeValue {
	if len(u.values) == 0 {
		return nil
	}
	return u.values
}

func numberAV(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

func keyOf(key string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{AttrLeaseKey: &types.AttributeValueMemberS{Value: key}}
}
