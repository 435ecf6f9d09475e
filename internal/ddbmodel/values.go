package ddbmodel

import (
	"bytes"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ItemSize is an item's size as DynamoDB bills it: for each attribute, the
// UTF-8 length of its name plus the size of its value. A string or binary
// is its length; a number about one byte per two significant digits plus
// one; a boolean or null one byte; a set the sum of its members; a list or
// map three bytes plus one per element plus its elements.
func ItemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numberSize(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
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
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	}
	return 0
}

// numberSize: DynamoDB stores up to 38 significant digits, two per byte,
// plus one byte (its documentation's "approximately").
func numberSize(s string) int {
	s = strings.TrimLeft(strings.TrimPrefix(s, "-"), "0")
	digits := 0
	for _, r := range s {
		if r >= '0' && r <= '9' {
			digits++
		}
	}
	return (digits+1)/2 + 1
}

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
