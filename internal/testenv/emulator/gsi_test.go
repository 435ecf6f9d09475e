package emulator

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// indexStatus is the index's status in a describe, "" when it is absent.
func indexStatus(t *testing.T, c *dynamodb.Client, table, index string) string {
	t.Helper()
	out, err := c.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range out.Table.GlobalSecondaryIndexes {
		if aws.ToString(g.IndexName) == index {
			return string(g.IndexStatus)
		}
	}
	return ""
}

func waitIndex(t *testing.T, c *dynamodb.Client, table, index, want string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if indexStatus(t, c, table, index) == want {
			return
		}
	}
	t.Fatalf("index %s of %s never became %q", index, table, want)
}

// ownerIndexCreate is the UpdateTable KCL 3.x sends to add its index
// (DynamoDBLeaseRefresher.createLeaseOwnerToLeaseKeyIndexIfNotExists).
func ownerIndexCreate(table string, pt *ddbtypes.ProvisionedThroughput) *dynamodb.UpdateTableInput {
	s := func(n string) ddbtypes.AttributeDefinition {
		return ddbtypes.AttributeDefinition{AttributeName: aws.String(n), AttributeType: ddbtypes.ScalarAttributeTypeS}
	}
	return &dynamodb.UpdateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []ddbtypes.AttributeDefinition{s("leaseOwner"), s("leaseKey")},
		GlobalSecondaryIndexUpdates: []ddbtypes.GlobalSecondaryIndexUpdate{{Create: &ddbtypes.CreateGlobalSecondaryIndexAction{
			IndexName: aws.String("LeaseOwnerToLeaseKeyIndex"),
			KeySchema: []ddbtypes.KeySchemaElement{
				{AttributeName: aws.String("leaseOwner"), KeyType: ddbtypes.KeyTypeHash},
				{AttributeName: aws.String("leaseKey"), KeyType: ddbtypes.KeyTypeRange},
			},
			Projection:            &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionTypeKeysOnly},
			ProvisionedThroughput: pt,
		}}},
	}
}

// TestDynaliteAddsAndDeletesAnIndex: with scripts/dynalite-gsi.cjs,
// UpdateTable adds an index to an on-demand table holding items (CREATING,
// then ACTIVE after the backfill), a Query on it returns each owner's
// leases, items written after it are indexed too, and a Delete removes it.
// Without the patch the Create fails (400, no throughput).
func TestDynaliteAddsAndDeletesAnIndex(t *testing.T) {
	c := DynamoDB(t)
	ctx := context.Background()
	table := Name(t, "gsi")
	CreateLeaseTable(t, c, table)
	put := func(key, owner string) {
		item := map[string]ddbtypes.AttributeValue{"leaseKey": &ddbtypes.AttributeValueMemberS{Value: key}}
		if owner != "" {
			item["leaseOwner"] = &ddbtypes.AttributeValueMemberS{Value: owner}
		}
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	put("shardId-0", "w1")
	put("shardId-1", "w2")
	put("shardId-2", "w1")
	put("shardId-3", "") // no owner: not in the index
	out, err := c.UpdateTable(ctx, ownerIndexCreate(table, nil))
	if err != nil {
		t.Fatalf("UpdateTable Create: %v", err)
	}
	if len(out.TableDescription.GlobalSecondaryIndexes) != 1 || out.TableDescription.GlobalSecondaryIndexes[0].IndexStatus != ddbtypes.IndexStatusCreating {
		t.Fatalf("UpdateTable answered %+v, want the index CREATING", out.TableDescription.GlobalSecondaryIndexes)
	}
	waitIndex(t, c, table, "LeaseOwnerToLeaseKeyIndex", "ACTIVE")
	put("shardId-4", "w2")
	query := func(owner string) []string {
		q, err := c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String("LeaseOwnerToLeaseKeyIndex"),
			KeyConditionExpression:    aws.String("leaseOwner = :o"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":o": &ddbtypes.AttributeValueMemberS{Value: owner}}})
		if err != nil {
			t.Fatalf("query the index: %v", err)
		}
		var keys []string
		for _, it := range q.Items {
			keys = append(keys, it["leaseKey"].(*ddbtypes.AttributeValueMemberS).Value)
		}
		slices.Sort(keys)
		return keys
	}
	if got := query("w1"); !slices.Equal(got, []string{"shardId-0", "shardId-2"}) {
		t.Fatalf("w1's leases by the index: %v", got)
	}
	if got := query("w2"); !slices.Equal(got, []string{"shardId-1", "shardId-4"}) {
		t.Fatalf("w2's leases by the index: %v", got)
	}
	// A second Create of the same index is refused, as DynamoDB does.
	if _, err := c.UpdateTable(ctx, ownerIndexCreate(table, nil)); err == nil {
		t.Fatal("a second Create of the index was accepted")
	}
	if _, err := c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(table),
		GlobalSecondaryIndexUpdates: []ddbtypes.GlobalSecondaryIndexUpdate{{Delete: &ddbtypes.DeleteGlobalSecondaryIndexAction{IndexName: aws.String("LeaseOwnerToLeaseKeyIndex")}}}}); err != nil {
		t.Fatalf("UpdateTable Delete: %v", err)
	}
	waitIndex(t, c, table, "LeaseOwnerToLeaseKeyIndex", "")
	var nf *ddbtypes.ResourceNotFoundException
	if _, err := c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(table),
		GlobalSecondaryIndexUpdates: []ddbtypes.GlobalSecondaryIndexUpdate{{Delete: &ddbtypes.DeleteGlobalSecondaryIndexAction{IndexName: aws.String("LeaseOwnerToLeaseKeyIndex")}}}}); !errors.As(err, &nf) {
		t.Fatalf("deleting an absent index: %v, want ResourceNotFoundException", err)
	}
}

// TestDynaliteIndexThroughputFollowsBillingMode: a provisioned table's
// index needs throughput and an on-demand table's must have none, as in
// DynamoDB (the KCL copies the table's throughput when provisioned).
func TestDynaliteIndexThroughputFollowsBillingMode(t *testing.T) {
	c := DynamoDB(t)
	ctx := context.Background()
	onDemand := Name(t, "od")
	CreateLeaseTable(t, c, onDemand)
	pt := &ddbtypes.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(5), WriteCapacityUnits: aws.Int64(5)}
	if _, err := c.UpdateTable(ctx, ownerIndexCreate(onDemand, pt)); err == nil || !strings.Contains(err.Error(), "PAY_PER_REQUEST") {
		t.Fatalf("throughput on an on-demand table's index: %v, want refused", err)
	}
	prov := Name(t, "prov")
	if _, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String(prov), ProvisionedThroughput: pt,
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("leaseKey"), KeyType: ddbtypes.KeyTypeHash}},
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("leaseKey"), AttributeType: ddbtypes.ScalarAttributeTypeS}}}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(prov)})
		if err == nil && out.Table.TableStatus == ddbtypes.TableStatusActive {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("provisioned table never ACTIVE")
		}
	}
	if _, err := c.UpdateTable(ctx, ownerIndexCreate(prov, nil)); err == nil {
		t.Fatal("an index without throughput on a provisioned table was accepted")
	}
	if _, err := c.UpdateTable(ctx, ownerIndexCreate(prov, pt)); err != nil {
		t.Fatalf("index with the table's throughput: %v", err)
	}
	waitIndex(t, c, prov, "LeaseOwnerToLeaseKeyIndex", "ACTIVE")
}
