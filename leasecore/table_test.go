package leasecore

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

func TestEnsureTableCreatesKCLShape(t *testing.T) {
	ddb := emulator.DynamoDB(t)
	table := emulator.Name(t, "app")
	ctx := context.Background()

	err := EnsureTable(ctx, ddb, table, false)
	var nf *TableNotFoundError
	if !errors.As(err, &nf) || nf.Table != table || nf.Region != emulator.Region {
		t.Fatalf("missing table without --create-table: %v, want *TableNotFoundError", err)
	}
	// It suggests the setting; cmd says it as --create-table
	// (TestDomainErrorsSayFlags).
	if !strings.Contains(err.Error(), "the create-table option") {
		t.Errorf("error does not suggest creating the table: %v", err)
	}

	if err := EnsureTable(ctx, ddb, table, true); err != nil {
		t.Fatal(err)
	}
	out, err := ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	d := out.Table
	if d.TableStatus != types.TableStatusActive {
		t.Errorf("status %s, want ACTIVE", d.TableStatus)
	}
	if d.BillingModeSummary == nil || d.BillingModeSummary.BillingMode != types.BillingModePayPerRequest {
		t.Errorf("billing mode %+v, want PAY_PER_REQUEST", d.BillingModeSummary)
	}
	if len(d.KeySchema) != 1 || aws.ToString(d.KeySchema[0].AttributeName) != "leaseKey" || d.KeySchema[0].KeyType != types.KeyTypeHash {
		t.Errorf("key schema %+v, want HASH leaseKey", d.KeySchema)
	}
	if len(d.AttributeDefinitions) != 1 || d.AttributeDefinitions[0].AttributeType != types.ScalarAttributeTypeS {
		t.Errorf("attribute definitions %+v, want leaseKey S", d.AttributeDefinitions)
	}
	if len(d.GlobalSecondaryIndexes) != 0 {
		t.Error("a KCL 2.x table has no GSI")
	}
	// Idempotent.
	if err := EnsureTable(ctx, ddb, table, true); err != nil {
		t.Fatal(err)
	}
}

func TestEnsureTableRefusesOtherShapes(t *testing.T) {
	ddb := emulator.DynamoDB(t)
	table := emulator.Name(t, "other")
	ctx := context.Background()
	_, err := ddb.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		BillingMode:          types.BillingModePayPerRequest,
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("ShardID"), KeyType: types.KeyTypeHash}},
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("ShardID"), AttributeType: types.ScalarAttributeTypeS}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := EnsureTable(ctx, ddb, table, true); err == nil || !strings.Contains(err.Error(), "not a KCL lease table") {
		t.Fatalf("vmware-go-kcl-shaped table: %v, want refusal", err)
	}
}
