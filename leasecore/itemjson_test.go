package leasecore

import (
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestItemJSONAllTypes(t *testing.T) {
	const doc = `{
	  "s": {"S": "x<&>\u00e9"}, "emptyS": {"S": ""},
	  "n": {"N": "1.0E7"},
	  "b": {"B": "AAEC"}, "emptyB": {"B": ""},
	  "t": {"BOOL": true}, "f": {"BOOL": false},
	  "z": {"NULL": true},
	  "ss": {"SS": ["b", "a"]}, "ns": {"NS": ["1", "-2.5"]}, "bs": {"BS": ["AA==", "AQ=="]},
	  "l": {"L": [{"N": "41.2"}, {"S": "x"}, {"L": []}]},
	  "m": {"M": {"C": {"L": [{"N": "100"}]}, "empty": {"M": {}}}}
	}`
	item, err := UnmarshalItemJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]types.AttributeValue{
		"s": s("x<&>é"), "emptyS": s(""),
		"n": n("1.0E7"),
		"b": &types.AttributeValueMemberB{Value: []byte{0, 1, 2}}, "emptyB": &types.AttributeValueMemberB{Value: []byte{}},
		"t": &types.AttributeValueMemberBOOL{Value: true}, "f": &types.AttributeValueMemberBOOL{Value: false},
		"z":  &types.AttributeValueMemberNULL{Value: true},
		"ss": ss("b", "a"), "ns": &types.AttributeValueMemberNS{Value: []string{"1", "-2.5"}},
		"bs": &types.AttributeValueMemberBS{Value: [][]byte{{0}, {1}}},
		"l":  &types.AttributeValueMemberL{Value: []types.AttributeValue{n("41.2"), s("x"), &types.AttributeValueMemberL{Value: []types.AttributeValue{}}}},
		"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"C":     &types.AttributeValueMemberL{Value: []types.AttributeValue{n("100")}},
			"empty": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}},
		}},
	}
	if !reflect.DeepEqual(item, want) {
		t.Fatalf("UnmarshalItemJSON:\n got %#v\nwant %#v", item, want)
	}
	js, err := MarshalItemJSON(item)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"x<&>é"`) {
		t.Errorf("MarshalItemJSON escaped HTML characters: %s", js)
	}
	if !strings.HasPrefix(string(js), `{"b":{"B":"AAEC"},"bs":`) {
		t.Errorf("MarshalItemJSON is not sorted/compact: %s", js)
	}
	back, err := UnmarshalItemJSON(js)
	if err != nil {
		t.Fatalf("re-read: %v\n%s", err, js)
	}
	if !reflect.DeepEqual(back, item) {
		t.Errorf("JSON round trip changed the item:\n got %#v\nwant %#v", back, item)
	}
}

func TestUnmarshalItemJSONErrors(t *testing.T) {
	tests := []struct{ doc, want string }{
		{`{"a": {"X": "1"}}`, `attribute "a": X: unknown DynamoDB type tag`},
		{`{"a": {"s": "1"}}`, `attribute "a": s: unknown DynamoDB type tag`},
		{`{"a": {"S": "1", "N": "1"}}`, `attribute "a": want exactly one type tag, got 2`},
		{`{"a": {}}`, `want exactly one type tag, got 0`},
		{`{"a": "x"}`, `attribute "a": want an object like {"S": "..."}, got a string`},
		{`{"a": null}`, `got null`},
		{`{"a": {"S": null}}`, `S: want a string, got null`},
		{`{"a": {"S": 5}}`, `S: want a string, got a number`},
		{`{"a": {"N": 5}}`, `N: want a number in a string, got a number`},
		{`{"a": {"N": "abc"}}`, `N: "abc" is not a number`},
		{`{"a": {"B": "!!"}}`, `B: bad base64`},
		{`{"a": {"BOOL": "true"}}`, `BOOL: want true or false`},
		{`{"a": {"NULL": false}}`, `NULL: want true`},
		{`{"a": {"SS": []}}`, `SS: empty set`},
		{`{"a": {"NS": ["x"]}}`, `NS: [0]: "x" is not a number`},
		{`{"a": {"SS": [1]}}`, `SS: [0]: want a string`},
		{`{"a": {"L": {}}}`, `L: want an array`},
		{`{"a": {"L": [{"Q": 1}]}}`, `L: [0]: Q: unknown DynamoDB type tag`},
		{`{"a": {"M": {"k": {"S": 1}}}}`, `M: "k": S: want a string`},
		{`[]`, `want an object of attributes, got an array`},
		{`null`, `want an object of attributes, got null`},
		{`{"a": {"S": "x"}} {}`, `trailing data`},
		{`{"a": {"S": "x"}} xyz`, `trailing data`},
		{`{"a": `, `item JSON`},
		{``, `item JSON`},
	}
	for _, tt := range tests {
		item, err := UnmarshalItemJSON([]byte(tt.doc))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("UnmarshalItemJSON(%s) = %v, %v; want error containing %q", tt.doc, item, err, tt.want)
		}
	}
}

func TestMarshalItemJSONErrors(t *testing.T) {
	tests := []struct {
		item map[string]types.AttributeValue
		want string
	}{
		{map[string]types.AttributeValue{"a": &types.AttributeValueMemberSS{}}, `attribute "a": empty SS`},
		{map[string]types.AttributeValue{"a": &types.AttributeValueMemberNS{}}, `empty NS`},
		{map[string]types.AttributeValue{"a": &types.AttributeValueMemberBS{}}, `empty BS`},
		{map[string]types.AttributeValue{"a": nil}, `nil value`},
		{map[string]types.AttributeValue{"a": (*types.AttributeValueMemberS)(nil)}, `nil value`},
		{map[string]types.AttributeValue{"a": &types.AttributeValueMemberL{Value: []types.AttributeValue{nil}}}, `[0]: nil value`},
		{map[string]types.AttributeValue{"a": &types.UnknownUnionMember{Tag: "Z"}}, `unsupported attribute value`},
	}
	for _, tt := range tests {
		if _, err := MarshalItemJSON(tt.item); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("MarshalItemJSON(%v) error %v, want %q", tt.item, err, tt.want)
		}
	}
}
