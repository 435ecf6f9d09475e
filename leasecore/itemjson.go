package leasecore

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// This file converts items to and from DynamoDB JSON, the wire form that
// `aws dynamodb put-item --item` takes and `get-item` prints:
// {"leaseKey": {"S": "shardId-000000000001"}, "leaseCounter": {"N": "7"}}.
// The fixtures are written in it, and export/import use it, so both
// directions are strict: whatever UnmarshalItemJSON accepts DynamoDB would
// accept too (as far as the shape goes), and MarshalItemJSON output
// unmarshals back to an equal item.

// UnmarshalItemJSON parses one item in DynamoDB JSON. Every value must be an
// object with exactly one type tag among S, N, B, BOOL, NULL, SS, NS, BS, L,
// M. N values must be numbers in DynamoDB syntax, B values standard base64,
// NULL must be true, and sets must not be empty (DynamoDB rejects all of
// these, better to say so while reading the file).
func UnmarshalItemJSON(data []byte) (map[string]types.AttributeValue, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // so a bare JSON number is reported, not silently converted
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("item JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("item JSON: trailing data after the item")
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("item JSON: want an object of attributes, got %s", jsonKind(raw))
	}
	item := make(map[string]types.AttributeValue, len(obj))
	for _, name := range slices.Sorted(maps.Keys(obj)) {
		av, err := attributeFromJSON(obj[name])
		if err != nil {
			return nil, fmt.Errorf("item JSON: attribute %q: %w", name, err)
		}
		item[name] = av
	}
	return item, nil
}

// MarshalItemJSON writes an item as compact DynamoDB JSON with attribute
// names in sorted order, so output is stable and diffable. It fails on
// values DynamoDB could not store either (nil values, empty sets, unknown
// union members).
func MarshalItemJSON(item map[string]types.AttributeValue) ([]byte, error) {
	obj := make(map[string]any, len(item))
	for name, av := range item {
		v, err := attributeToJSON(av)
		if err != nil {
			return nil, fmt.Errorf("item JSON: attribute %q: %w", name, err)
		}
		obj[name] = v
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep '<', '>' and '&' readable in exports
	if err := enc.Encode(obj); err != nil {
		return nil, fmt.Errorf("item JSON: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func attributeFromJSON(v any) (types.AttributeValue, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf(`want an object like {"S": "..."}, got %s`, jsonKind(v))
	}
	if len(obj) != 1 {
		return nil, fmt.Errorf("want exactly one type tag, got %d (%v)", len(obj), slices.Sorted(maps.Keys(obj)))
	}
	tag := slices.Sorted(maps.Keys(obj))[0]
	av, err := typedFromJSON(tag, obj[tag])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tag, err)
	}
	return av, nil
}

func typedFromJSON(tag string, val any) (types.AttributeValue, error) {
	switch tag {
	case "S":
		s, err := jsonString(val)
		if err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberS{Value: s}, nil
	case "N":
		n, err := jsonNumber(val)
		if err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberN{Value: n}, nil
	case "B":
		b, err := jsonBinary(val)
		if err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberB{Value: b}, nil
	case "BOOL":
		b, ok := val.(bool)
		if !ok {
			return nil, fmt.Errorf("want true or false, got %s", jsonKind(val))
		}
		return &types.AttributeValueMemberBOOL{Value: b}, nil
	case "NULL":
		if b, ok := val.(bool); !ok || !b {
			return nil, errors.New("want true (DynamoDB only accepts NULL: true)")
		}
		return &types.AttributeValueMemberNULL{Value: true}, nil
	case "SS":
		set, err := jsonSet(val, jsonString)
		if err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberSS{Value: set}, nil
	case "NS":
		set, err := jsonSet(val, jsonNumber)
		if err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberNS{Value: set}, nil
	case "BS":
		set, err := jsonSet(val, jsonBinary)
		if err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberBS{Value: set}, nil
	case "L":
		arr, ok := val.([]any)
		if !ok {
			return nil, fmt.Errorf("want an array, got %s", jsonKind(val))
		}
		list := make([]types.AttributeValue, len(arr))
		for i, e := range arr {
			av, err := attributeFromJSON(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			list[i] = av
		}
		return &types.AttributeValueMemberL{Value: list}, nil
	case "M":
		obj, ok := val.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("want an object, got %s", jsonKind(val))
		}
		m := make(map[string]types.AttributeValue, len(obj))
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			av, err := attributeFromJSON(obj[k])
			if err != nil {
				return nil, fmt.Errorf("%q: %w", k, err)
			}
			m[k] = av
		}
		return &types.AttributeValueMemberM{Value: m}, nil
	}
	return nil, errors.New("unknown DynamoDB type tag (want S, N, B, BOOL, NULL, SS, NS, BS, L or M)")
}

func jsonString(v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("want a string, got %s", jsonKind(v))
	}
	return s, nil
}

// jsonNumber reads an N value. DynamoDB JSON carries numbers as strings; a
// bare JSON number is refused so that precision is never lost on the way.
func jsonNumber(v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("want a number in a string, got %s", jsonKind(v))
	}
	if _, ok := parseDecimal(s); !ok {
		return "", fmt.Errorf("%s is not a number", quoteShort(s))
	}
	return s, nil
}

func jsonBinary(v any) ([]byte, error) {
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("want a base64 string, got %s", jsonKind(v))
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("bad base64: %w", err)
	}
	return b, nil
}

func jsonSet[T any](v any, elem func(any) (T, error)) ([]T, error) {
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("want an array, got %s", jsonKind(v))
	}
	if len(arr) == 0 {
		return nil, errors.New("empty set (DynamoDB sets cannot be empty)")
	}
	set := make([]T, len(arr))
	for i, e := range arr {
		x, err := elem(e)
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		set[i] = x
	}
	return set, nil
}

func attributeToJSON(av types.AttributeValue) (any, error) {
	if isNilAV(av) {
		return nil, errors.New("nil value")
	}
	tagged := func(tag string, v any) (any, error) { return map[string]any{tag: v}, nil }
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return tagged("S", v.Value)
	case *types.AttributeValueMemberN:
		return tagged("N", v.Value)
	case *types.AttributeValueMemberB:
		return tagged("B", base64.StdEncoding.EncodeToString(v.Value))
	case *types.AttributeValueMemberBOOL:
		return tagged("BOOL", v.Value)
	case *types.AttributeValueMemberNULL:
		return tagged("NULL", true)
	case *types.AttributeValueMemberSS:
		if len(v.Value) == 0 {
			return nil, errors.New("empty SS (DynamoDB sets cannot be empty)")
		}
		return tagged("SS", v.Value)
	case *types.AttributeValueMemberNS:
		if len(v.Value) == 0 {
			return nil, errors.New("empty NS (DynamoDB sets cannot be empty)")
		}
		return tagged("NS", v.Value)
	case *types.AttributeValueMemberBS:
		if len(v.Value) == 0 {
			return nil, errors.New("empty BS (DynamoDB sets cannot be empty)")
		}
		enc := make([]string, len(v.Value))
		for i, b := range v.Value {
			enc[i] = base64.StdEncoding.EncodeToString(b)
		}
		return tagged("BS", enc)
	case *types.AttributeValueMemberL:
		list := make([]any, len(v.Value))
		for i, e := range v.Value {
			x, err := attributeToJSON(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			list[i] = x
		}
		return tagged("L", list)
	case *types.AttributeValueMemberM:
		m := make(map[string]any, len(v.Value))
		for k, e := range v.Value {
			x, err := attributeToJSON(e)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", k, err)
			}
			m[k] = x
		}
		return tagged("M", m)
	}
	return nil, fmt.Errorf("unsupported attribute value %T", av)
}

// typeTag names the DynamoDB type of a value, for error messages.
func typeTag(av types.AttributeValue) string {
	switch av.(type) {
	case *types.AttributeValueMemberS:
		return "S"
	case *types.AttributeValueMemberN:
		return "N"
	case *types.AttributeValueMemberB:
		return "B"
	case *types.AttributeValueMemberBOOL:
		return "BOOL"
	case *types.AttributeValueMemberNULL:
		return "NULL"
	case *types.AttributeValueMemberSS:
		return "SS"
	case *types.AttributeValueMemberNS:
		return "NS"
	case *types.AttributeValueMemberBS:
		return "BS"
	case *types.AttributeValueMemberL:
		return "L"
	case *types.AttributeValueMemberM:
		return "M"
	}
	return fmt.Sprintf("%T", av)
}

// isNilAV reports a nil interface or a typed nil pointer; both mean "no
// value" and must not be dereferenced.
func isNilAV(av types.AttributeValue) bool {
	switch v := av.(type) {
	case nil:
		return true
	case *types.AttributeValueMemberS:
		return v == nil
	case *types.AttributeValueMemberN:
		return v == nil
	case *types.AttributeValueMemberB:
		return v == nil
	case *types.AttributeValueMemberBOOL:
		return v == nil
	case *types.AttributeValueMemberNULL:
		return v == nil
	case *types.AttributeValueMemberSS:
		return v == nil
	case *types.AttributeValueMemberNS:
		return v == nil
	case *types.AttributeValueMemberBS:
		return v == nil
	case *types.AttributeValueMemberL:
		return v == nil
	case *types.AttributeValueMemberM:
		return v == nil
	}
	return false
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
