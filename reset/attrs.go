package reset

import (
	"bytes"
	"slices"
	"sort"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// diffAttributes returns the names of the attributes in which a and b
// differ, sorted, ignoring the names in skip. Sets compare as sets:
// DynamoDB does not keep their order.
func diffAttributes(a, b map[string]types.AttributeValue, skip ...string) []string {
	var out []string
	for name, av := range a {
		if slices.Contains(skip, name) {
			continue
		}
		if bv, ok := b[name]; !ok || !equalAV(av, bv) {
			out = append(out, name)
		}
	}
	for name := range b {
		if _, ok := a[name]; !ok && !slices.Contains(skip, name) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// equalAV compares two attribute values by type and content.
func equalAV(a, b types.AttributeValue) bool {
	switch x := a.(type) {
	case *types.AttributeValueMemberS:
		y, ok := b.(*types.AttributeValueMemberS)
		return ok && x.Value == y.Value
	case *types.AttributeValueMemberN:
		y, ok := b.(*types.AttributeValueMemberN)
		return ok && x.Value == y.Value
	case *types.AttributeValueMemberB:
		y, ok := b.(*types.AttributeValueMemberB)
		return ok && bytes.Equal(x.Value, y.Value)
	case *types.AttributeValueMemberBOOL:
		y, ok := b.(*types.AttributeValueMemberBOOL)
		return ok && x.Value == y.Value
	case *types.AttributeValueMemberNULL:
		y, ok := b.(*types.AttributeValueMemberNULL)
		return ok && x.Value == y.Value
	case *types.AttributeValueMemberSS:
		y, ok := b.(*types.AttributeValueMemberSS)
		return ok && sameSet(x.Value, y.Value)
	case *types.AttributeValueMemberNS:
		y, ok := b.(*types.AttributeValueMemberNS)
		return ok && sameSet(x.Value, y.Value)
	case *types.AttributeValueMemberBS:
		y, ok := b.(*types.AttributeValueMemberBS)
		if !ok || len(x.Value) != len(y.Value) {
			return false
		}
		xs, ys := make([]string, len(x.Value)), make([]string, len(y.Value))
		for i := range x.Value {
			xs[i], ys[i] = string(x.Value[i]), string(y.Value[i])
		}
		return sameSet(xs, ys)
	case *types.AttributeValueMemberL:
		y, ok := b.(*types.AttributeValueMemberL)
		if !ok || len(x.Value) != len(y.Value) {
			return false
		}
		for i := range x.Value {
			if !equalAV(x.Value[i], y.Value[i]) {
				return false
			}
		}
		return true
	case *types.AttributeValueMemberM:
		y, ok := b.(*types.AttributeValueMemberM)
		return ok && len(diffAttributes(x.Value, y.Value)) == 0
	}
	return false
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	x, y := slices.Clone(a), slices.Clone(b)
	sort.Strings(x)
	sort.Strings(y)
	return slices.Equal(x, y)
}

// EqualItems reports whether two items hold the same attributes with the
// same values, ignoring the names in skip.
func EqualItems(a, b map[string]types.AttributeValue, skip ...string) bool {
	return len(diffAttributes(a, b, skip...)) == 0
}
