package kcl3fleet

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"sort"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// TestMain stops the local DynamoDB server the tests started.
func TestMain(m *testing.M) { os.Exit(emulator.Main(m)) }

// typeTag names an attribute value's DynamoDB type.
func typeTag(av ddbtypes.AttributeValue) string {
	switch av.(type) {
	case *ddbtypes.AttributeValueMemberS:
		return "S"
	case *ddbtypes.AttributeValueMemberN:
		return "N"
	case *ddbtypes.AttributeValueMemberM:
		return "M"
	case *ddbtypes.AttributeValueMemberL:
		return "L"
	case *ddbtypes.AttributeValueMemberSS:
		return "SS"
	case *ddbtypes.AttributeValueMemberB:
		return "B"
	case *ddbtypes.AttributeValueMemberBOOL:
		return "BOOL"
	}
	return fmt.Sprintf("%T", av)
}

// types maps every attribute of item to its type, so that a test compares
// an item's whole shape at once.
func types(item map[string]ddbtypes.AttributeValue) map[string]string {
	out := map[string]string{}
	for k, v := range item {
		out[k] = typeTag(v)
	}
	return out
}

func getItem(t *testing.T, ddb API, table, keyAttr, key string) map[string]ddbtypes.AttributeValue {
	t.Helper()
	out, err := ddb.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{keyAttr: &ddbtypes.AttributeValueMemberS{Value: key}},
	})
	if err != nil {
		t.Fatalf("get %s from %s: %v", key, table, err)
	}
	return out.Item
}

func str(item map[string]ddbtypes.AttributeValue, a string) string {
	switch v := item[a].(type) {
	case *ddbtypes.AttributeValueMemberS:
		return v.Value
	case *ddbtypes.AttributeValueMemberN:
		return v.Value
	}
	return ""
}

func tableNames(t *testing.T, ddb *dynamodb.Client, names ...string) []string {
	t.Helper()
	var out []string
	for _, name := range names {
		_, err := ddb.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err == nil {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func mustEqual(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got  %v\n want %v", what, got, want)
	}
}
