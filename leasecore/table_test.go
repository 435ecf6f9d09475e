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
	// Idempotent, and the created table passes the 3.x check.
	if err := EnsureTable(ctx, ddb, table, true); err != nil {
		t.Fatal(err)
	}
	if err := CheckNotKCL3(ctx, ddb, table); err != nil {
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

func TestCheckNotKCL3(t *testing.T) {
	ctx := context.Background()
	put := func(t *testing.T, ddb *dynamodb.Client, table string, item map[string]types.AttributeValue) {
		t.Helper()
		if _, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	str := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	tests := []struct {
		name     string
		setup    func(t *testing.T, ddb *dynamodb.Client, table string)
		evidence string // "" = accepted
	}{
		{name: "2.x table with leases", setup: func(t *testing.T, ddb *dynamodb.Client, table string) {}},
		{name: "3.5 lease with entityType LEASE only", evidence: "", setup: func(t *testing.T, ddb *dynamodb.Client, table string) {
			item := EncodeLease(mustGet(t, ddb, table, shardKey(0)))
			item["entityType"] = str("LEASE")
			put(t, ddb, table, item)
		}},
		{name: "leader lock item", evidence: "non-lease items", setup: func(t *testing.T, ddb *dynamodb.Client, table string) {
			put(t, ddb, table, map[string]types.AttributeValue{"leaseKey": str("Leader"), "ownerName": str("w"), "entityType": str("LEADER")})
		}},
		{name: "worker metrics item", evidence: "WORKER_METRIC_STATS", setup: func(t *testing.T, ddb *dynamodb.Client, table string) {
			put(t, ddb, table, map[string]types.AttributeValue{"leaseKey": str("worker-b"), "entityType": str("WORKER_METRIC_STATS")})
		}},
		{name: "lease in graceful handoff", evidence: "checkpointOwner", setup: func(t *testing.T, ddb *dynamodb.Client, table string) {
			l := mustGet(t, ddb, table, shardKey(1))
			l.LeaseOwner, l.CheckpointOwner = "worker-c", "worker-b"
			put(t, ddb, table, EncodeLease(l))
		}},
		{name: "CoordinatorState table", evidence: "-CoordinatorState exists", setup: func(t *testing.T, ddb *dynamodb.Client, table string) {
			createKeyTable(t, ddb, table+"-CoordinatorState", "key")
		}},
		{name: "WorkerMetricStats table", evidence: "-WorkerMetricStats exists", setup: func(t *testing.T, ddb *dynamodb.Client, table string) {
			createKeyTable(t, ddb, table+"-WorkerMetricStats", "wid")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ddb, table := newLeaseTable(t, 2)
			tt.setup(t, ddb, table)
			err := CheckNotKCL3(ctx, ddb, table)
			checkKCL3Verdict(t, err, tt.evidence)
		})
	}

	t.Run("GSI LeaseOwnerToLeaseKeyIndex", func(t *testing.T) {
		ddb := emulator.DynamoDB(t)
		table := emulator.Name(t, "kcl3")
		_, err := ddb.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName:   aws.String(table),
			BillingMode: types.BillingModePayPerRequest,
			KeySchema:   []types.KeySchemaElement{{AttributeName: aws.String("leaseKey"), KeyType: types.KeyTypeHash}},
			AttributeDefinitions: []types.AttributeDefinition{
				{AttributeName: aws.String("leaseKey"), AttributeType: types.ScalarAttributeTypeS},
				{AttributeName: aws.String("leaseOwner"), AttributeType: types.ScalarAttributeTypeS},
			},
			GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
				IndexName: aws.String(KCL3IndexName),
				KeySchema: []types.KeySchemaElement{
					{AttributeName: aws.String("leaseOwner"), KeyType: types.KeyTypeHash},
					{AttributeName: aws.String("leaseKey"), KeyType: types.KeyTypeRange},
				},
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
			}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := EnsureTable(ctx, ddb, table, false); err != nil {
			t.Fatal(err)
		}
		checkKCL3Verdict(t, CheckNotKCL3(ctx, ddb, table), KCL3IndexName)
	})

	t.Run("missing table", func(t *testing.T) {
		var nf *TableNotFoundError
		if err := CheckNotKCL3(ctx, emulator.DynamoDB(t), emulator.Name(t, "none")); !errors.As(err, &nf) {
			t.Fatalf("%v, want *TableNotFoundError", err)
		}
	})
}

func checkKCL3Verdict(t *testing.T, err error, evidence string) {
	t.Helper()
	if evidence == "" {
		if err != nil {
			t.Fatalf("a 2.x table was refused: %v", err)
		}
		return
	}
	var k3 *KCL3TableError
	if !errors.As(err, &k3) || !errors.Is(err, ErrKCL3Table) {
		t.Fatalf("got %v, want *KCL3TableError", err)
	}
	if !strings.Contains(k3.Evidence, evidence) || !strings.Contains(err.Error(), "elected leader") {
		t.Fatalf("message %q should name %q and explain the leader", err, evidence)
	}
}

func createKeyTable(t *testing.T, ddb *dynamodb.Client, name, key string) {
	t.Helper()
	_, err := ddb.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(key), KeyType: types.KeyTypeHash}},
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(key), AttributeType: types.ScalarAttributeTypeS}},
	})
	if err != nil {
		t.Fatal(err)
	}
}
