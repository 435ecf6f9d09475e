package ddbmodel

import (
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The KCL's own lease writes (DynamoDBLeaseRefresher) use DynamoDB's legacy
// parameters, Expected and AttributeUpdates. The model answers them by
// rewriting them into the expression forms it evaluates, which DynamoDB
// treats alike: an expected value is "#a = :v", Exists false is
// attribute_not_exists(#a), Exists true with a value is "#a = :v"; PUT is
// SET, DELETE without a value REMOVE, ADD of a number ADD. Anything else
// (ComparisonOperator, a DELETE from a set) is a ValidationException.

// legacyCondition returns the condition expression of expected, with its
// names and values added to copies of names and values.
func legacyCondition(expected map[string]types.ExpectedAttributeValue, names map[string]string, values map[string]types.AttributeValue) (*string, map[string]string, map[string]types.AttributeValue, error) {
	if len(expected) == 0 {
		return nil, names, values, nil
	}
	names, values = copyNames(names), copyValues(values)
	attrs := make([]string, 0, len(expected))
	for a := range expected {
		attrs = append(attrs, a)
	}
	sort.Strings(attrs)
	expr := ""
	for i, a := range attrs {
		e := expected[a]
		if e.ComparisonOperator != "" || len(e.AttributeValueList) > 0 {
			return nil, nil, nil, validation("legacy Expected with ComparisonOperator is not modelled")
		}
		n, v := fmt.Sprintf("#lgc%d", i), fmt.Sprintf(":lgc%d", i)
		names[n] = a
		var clause string
		switch {
		case e.Value != nil:
			if e.Exists != nil && !*e.Exists {
				return nil, nil, nil, validation("Exists false with a Value")
			}
			values[v] = e.Value
			clause = n + " = " + v
		case e.Exists != nil && !*e.Exists:
			clause = "attribute_not_exists(" + n + ")"
		default:
			return nil, nil, nil, validation("legacy Expected needs a Value or Exists false")
		}
		if i > 0 {
			expr += " AND "
		}
		expr += clause
	}
	return aws.String(expr), names, values, nil
}

// legacyUpdate returns the update expression of updates.
func legacyUpdate(updates map[string]types.AttributeValueUpdate, names map[string]string, values map[string]types.AttributeValue) (*string, map[string]string, map[string]types.AttributeValue, error) {
	names, values = copyNames(names), copyValues(values)
	attrs := make([]string, 0, len(updates))
	for a := range updates {
		attrs = append(attrs, a)
	}
	sort.Strings(attrs)
	var set, add, remove string
	join := func(s *string, part string) {
		if *s != "" {
			*s += ", "
		}
		*s += part
	}
	for i, a := range attrs {
		u := updates[a]
		n, v := fmt.Sprintf("#lgu%d", i), fmt.Sprintf(":lgu%d", i)
		names[n] = a
		switch u.Action {
		case types.AttributeActionPut, "":
			values[v] = u.Value
			join(&set, n+" = "+v)
		case types.AttributeActionAdd:
			values[v] = u.Value
			join(&add, n+" "+v)
		case types.AttributeActionDelete:
			if u.Value != nil {
				return nil, nil, nil, validation("legacy DELETE from a set is not modelled")
			}
			join(&remove, n)
		}
	}
	expr := ""
	for _, c := range []struct{ kw, body string }{{"SET", set}, {"ADD", add}, {"REMOVE", remove}} {
		if c.body != "" {
			if expr != "" {
				expr += " "
			}
			expr += c.kw + " " + c.body
		}
	}
	return aws.String(expr), names, values, nil
}

func copyNames(in map[string]string) map[string]string {
	out := make(map[string]string, len(in)+4)
	for k, v := range in {
		out[k] = v
	}
	return out
}

func copyValues(in map[string]types.AttributeValue) map[string]types.AttributeValue {
	out := make(map[string]types.AttributeValue, len(in)+4)
	for k, v := range in {
		out[k] = v
	}
	return out
}
