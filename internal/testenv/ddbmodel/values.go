package ddbmodel

import (
	"bytes"
	"math/big"
	"slices"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func equalAV(a, b types.AttributeValue) bool {
	switch a := a.(type) {
	case *types.AttributeValueMemberS:
		b, ok := b.(*types.AttributeValueMemberS)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberN:
		b, ok := b.(*types.AttributeValueMemberN)
		if !ok {
			return false
		}
		if a.Value == b.Value {
			return true
		}
		if x, err := strconv.ParseInt(a.Value, 10, 64); err == nil {
			if y, err := strconv.ParseInt(b.Value, 10, 64); err == nil {
				return x == y
			}
		}
		x, ok1 := new(big.Rat).SetString(a.Value)
		y, ok2 := new(big.Rat).SetString(b.Value)
		return ok1 && ok2 && x.Cmp(y) == 0
	case *types.AttributeValueMemberB:
		b, ok := b.(*types.AttributeValueMemberB)
		return ok && bytes.Equal(a.Value, b.Value)
	case *types.AttributeValueMemberBOOL:
		b, ok := b.(*types.AttributeValueMemberBOOL)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberSS:
		b, ok := b.(*types.AttributeValueMemberSS)
		return ok && sameSet(a.Value, b.Value)
	}
	return false // other types are never compared by the lease protocol
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// addNumber is ADD on a number: the attribute's value plus the operand (an
// absent attribute counts as 0).
func addNumber(have types.AttributeValue, add *types.AttributeValueMemberN) (types.AttributeValue, error) {
	y, ok := new(big.Rat).SetString(add.Value)
	if !ok {
		return nil, validation("ADD operand is not a number")
	}
	x := new(big.Rat)
	if have != nil {
		n, ok := have.(*types.AttributeValueMemberN)
		if !ok {
			return nil, validation("An operand in the update expression has an incorrect data type")
		}
		if _, ok := x.SetString(n.Value); !ok {
			return nil, validation("stored number does not parse")
		}
	}
	x.Add(x, y)
	return &types.AttributeValueMemberN{Value: x.RatString()}, nil
}
