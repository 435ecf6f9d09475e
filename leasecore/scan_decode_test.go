package leasecore

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// everyType is an item with every attribute type and strings that need
// escaping in JSON, next to the fixtures' lease items.
func everyType() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"leaseKey":  &types.AttributeValueMemberS{Value: `odd "key" \ é ☃ <>& ` + "\u2028\t"},
		"n":         &types.AttributeValueMemberN{Value: "1.0E7"},
		"b":         &types.AttributeValueMemberB{Value: []byte{0, 1, 2, 250, 255}},
		"ss":        &types.AttributeValueMemberSS{Value: []string{"a", "b\"c"}},
		"ns":        &types.AttributeValueMemberNS{Value: []string{"1", "-2.5"}},
		"bs":        &types.AttributeValueMemberBS{Value: [][]byte{{1}, {2, 3}}},
		"t":         &types.AttributeValueMemberBOOL{Value: true},
		"f":         &types.AttributeValueMemberBOOL{Value: false},
		"null":      &types.AttributeValueMemberNULL{Value: true},
		"list":      &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "x"}, &types.AttributeValueMemberL{Value: []types.AttributeValue{}}}},
		"map":       &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": &types.AttributeValueMemberN{Value: "3"}, "e": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}}},
		"emptyList": &types.AttributeValueMemberL{Value: []types.AttributeValue{}},
	}
}

// scanBothWays scans the whole table page by page, once with the SDK's
// decoder and once with the fast one, and requires equal pages. It returns
// how many pages the fast decoder left to the SDK.
func scanBothWays(t *testing.T, c *dynamodb.Client, table string) (pages int, fallbacks int64) {
	t.Helper()
	ctx := context.Background()
	// As every lease-table scan does, it asks for the consumed capacity.
	in := &dynamodb.ScanInput{TableName: aws.String(table), Limit: aws.Int32(2), ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal}
	before := sdkDecodedScans.Load()
	for {
		sdk, err := c.Scan(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		fast, err := c.Scan(ctx, in, fastScan)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if !reflect.DeepEqual(sdk.Items, fast.Items) || !reflect.DeepEqual(sdk.LastEvaluatedKey, fast.LastEvaluatedKey) ||
			!reflect.DeepEqual(sdk.ConsumedCapacity, fast.ConsumedCapacity) || sdk.ConsumedCapacity == nil ||
			sdk.Count != fast.Count || sdk.ScannedCount != fast.ScannedCount {
			t.Fatalf("table %s page %d differs:\nSDK  %#v\nfast %#v", table, pages, sdk, fast)
		}
		if len(sdk.LastEvaluatedKey) == 0 {
			return pages, sdkDecodedScans.Load() - before
		}
		in.ExclusiveStartKey = sdk.LastEvaluatedKey
	}
}

// On dynalite's answers the fast Scan decoder gives exactly what the SDK's
// gives, for every shared fixture (each file in a table of its own: some
// share a leaseKey) and for an item holding every attribute type; and it
// decodes them itself rather than handing them back.
func TestFastScanMatchesSDK(t *testing.T) {
	c := emulator.DynamoDB(t)
	ctx := context.Background()
	files := append(append([]string{}, leaseFixtures...), "f6-kcl35-non-lease.jsonl")
	for _, name := range append(files, "every type") {
		table := emulator.Name(t, "fastscan")
		emulator.CreateLeaseTable(t, c, table)
		var items []map[string]types.AttributeValue
		if name == "every type" {
			items = append(items, everyType())
			for _, key := range []string{"shardId-000000000001", "shardId-000000000002", "shardId-000000000003"} {
				items = append(items, map[string]types.AttributeValue{"leaseKey": &types.AttributeValueMemberS{Value: key},
					"leaseCounter": &types.AttributeValueMemberN{Value: "1"}})
			}
		} else {
			items = loadFixture(t, name)
		}
		for _, item := range items {
			if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		pages, fallbacks := scanBothWays(t, c, table)
		if fallbacks != 0 {
			t.Errorf("%s: %d of %d pages went to the SDK's decoder; want none", name, fallbacks, pages)
		}
	}
}

// Answers shaped other than dynalite shapes them: white space, other field
// orders, ConsumedCapacity, attribute values the decoder does not know, and
// garbage, which must give the SDK's result (or its error).
func TestFastScanMatchesSDKOnOddAnswers(t *testing.T) {
	cases := []struct {
		body string
		fast bool
	}{
		{`{"Count":0,"Items":[],"ScannedCount":0}`, true},
		{` { "ScannedCount" : 1 , "Items" : [ { "leaseKey" : { "S" : "k\u00e9\"" } , "c" : { "N" : "1" } } ] , "Count" : 1 , "LastEvaluatedKey" : { "leaseKey" : { "S" : "k" } } } `, true},
		{`{"Count":1,"Items":[{"leaseKey":{"S":"k"}}],"ScannedCount":1,"ConsumedCapacity":{"TableName":"t","CapacityUnits":0.5}}`, true},
		{`{"ConsumedCapacity":{"CapacityUnits":1.5e2,"ReadCapacityUnits":150,"TableName":"t\u00e9","Table":{"CapacityUnits":150}},"Count":0,"Items":[],"ScannedCount":0}`, true},
		{`{"Count":0,"Items":[],"ScannedCount":0,"ConsumedCapacity":{"TableName":"t","CapacityUnits":1,"GlobalSecondaryIndexes":{"i":{"CapacityUnits":1}}}}`, false},
		{`{"Count":0,"Items":[],"ScannedCount":0,"ConsumedCapacity":{"TableName":"t","CapacityUnits":"1"}}`, false},
		{`{"Count":0,"Items":[],"ScannedCount":0,"ConsumedCapacity":{"Table":{"TableName":"t"}}}`, false},
		{`{"Count":1,"Items":[{"leaseKey":{"S":"k"},"x":{}}],"ScannedCount":1}`, false},
		{`{"Count":1,"Items":[{"leaseKey":{"S":"k","N":"1"}}],"ScannedCount":1}`, false},
		{`{"Count":1,"Items":[{"leaseKey":{"S":null}}],"ScannedCount":1}`, false},
		{`{"Count":1,"Items":[{"leaseKey":{"Q":"k"}}],"ScannedCount":1}`, false},
		{`{"Count":1,"Items":[{"b":{"B":"AAE\u003d"}}],"ScannedCount":1}`, false},
		{`{"Count":1,"Items":[{"le\u0061seKey":{"S":"k"}}],"ScannedCount":1}`, false},
		{`{"Count":1,"Items":[{"leaseKey":{"S":"k"}}],"ScannedCount":1} trailing`, false},
		{`{"Count":1.5,"Items":[],"ScannedCount":1}`, false},
		{`{"Count":0,"Items":null,"ScannedCount":0}`, false},
	}
	for _, tc := range cases {
		if got := decodeScan([]byte(tc.body), &dynamodb.ScanOutput{}) == nil; got != tc.fast {
			t.Errorf("body %s: fast path taken %v, want %v", tc.body, got, tc.fast)
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			_, _ = w.Write([]byte(tc.body))
		}))
		c := dynamodb.NewFromConfig(emulator.Config(), func(o *dynamodb.Options) {
			o.BaseEndpoint = aws.String(srv.URL)
			o.RetryMaxAttempts = 1
		})
		ctx := context.Background()
		in := &dynamodb.ScanInput{TableName: aws.String("t")}
		sdk, sdkErr := c.Scan(ctx, in)
		fast, fastErr := c.Scan(ctx, in, fastScan)
		srv.Close()
		if (sdkErr == nil) != (fastErr == nil) {
			t.Fatalf("body %s: SDK error %v, fast error %v", tc.body, sdkErr, fastErr)
		}
		if sdkErr != nil {
			continue
		}
		if !reflect.DeepEqual(sdk.Items, fast.Items) || !reflect.DeepEqual(sdk.LastEvaluatedKey, fast.LastEvaluatedKey) ||
			!reflect.DeepEqual(sdk.ConsumedCapacity, fast.ConsumedCapacity) || sdk.Count != fast.Count || sdk.ScannedCount != fast.ScannedCount {
			t.Fatalf("body %s:\nSDK  %#v\nfast %#v", tc.body, sdk, fast)
		}
	}
}

// FuzzDecodeScan: any bytes either decode or are handed back, never panic,
// and a decoded answer holds no nil attribute value.
func FuzzDecodeScan(f *testing.F) {
	f.Add([]byte(`{"Count":1,"Items":[{"leaseKey":{"S":"k"},"n":{"N":"1"},"l":{"L":[{"M":{"b":{"B":"AAE="}}}]}}],"ScannedCount":1,"LastEvaluatedKey":{"leaseKey":{"S":"k"}}}`))
	f.Add([]byte(`{"Items":[{"ss":{"SS":["a"]},"bs":{"BS":["AA=="]},"t":{"BOOL":true},"z":{"NULL":true},"ns":{"NS":["1"]}}]}`))
	f.Add([]byte(`{"ConsumedCapacity":{"CapacityUnits":0.5,"ReadCapacityUnits":1e0,"TableName":"t","Table":{"CapacityUnits":0.5}},"Count":0,"Items":[],"ScannedCount":0}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var o dynamodb.ScanOutput
		if decodeScan(body, &o) != nil {
			return
		}
		var check func(av types.AttributeValue)
		check = func(av types.AttributeValue) {
			switch v := av.(type) {
			case nil:
				t.Fatalf("nil attribute value from %q", body)
			case *types.AttributeValueMemberL:
				for _, e := range v.Value {
					check(e)
				}
			case *types.AttributeValueMemberM:
				for _, e := range v.Value {
					check(e)
				}
			}
		}
		for _, item := range append(o.Items, o.LastEvaluatedKey) {
			for _, av := range item {
				check(av)
			}
		}
	})
}
