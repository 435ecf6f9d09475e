package ddbmodel_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/testenv/clocktest"
	"github.com/kcltool/kcltool/internal/testenv/ddbmodel"
	"github.com/kcltool/kcltool/leasecore"
)

// TestIndexWriteUnits: a write that puts a lease into the
// LeaseOwnerToLeaseKeyIndex, takes it out or changes its owner costs index
// writes besides the table's (1, 1, 2 units: a delete and a put), and one
// that leaves the owner alone (a renewal) costs none, as DynamoDB bills a
// KEYS_ONLY global secondary index.
func TestIndexWriteUnits(t *testing.T) {
	ctx := context.Background()
	m := ddbmodel.New(ddbmodel.Config{Table: "t", HashKey: leasecore.AttrLeaseKey,
		Indexes: []ddbmodel.Index{{Name: leasecore.KCL3IndexName, HashKey: leasecore.AttrLeaseOwner, RangeKey: leasecore.AttrLeaseKey}}}, clocktest.New(time.Unix(1_700_000_000, 0)))
	key := map[string]types.AttributeValue{leasecore.AttrLeaseKey: &types.AttributeValueMemberS{Value: "shardId-0"}}
	set := func(expr string, vals map[string]types.AttributeValue) {
		t.Helper()
		if _, err := m.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: key, UpdateExpression: aws.String(expr), ExpressionAttributeValues: vals}); err != nil {
			t.Fatal(err)
		}
	}
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	steps := []struct {
		name string
		do   func()
		want float64 // index write units of the step
	}{
		{"created unowned", func() {
			if _, err := m.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: leasecore.EncodeLease(leasecore.Lease{LeaseKey: "shardId-0"})}); err != nil {
				t.Fatal(err)
			}
		}, 0},
		{"assigned", func() { set("SET leaseOwner = :o", map[string]types.AttributeValue{":o": s("w1")}) }, 1},
		{"renewed", func() {
			set("ADD leaseCounter :one", map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}})
		}, 0},
		{"moved", func() { set("SET leaseOwner = :o", map[string]types.AttributeValue{":o": s("w2")}) }, 2},
		{"evicted", func() { set("REMOVE leaseOwner", nil) }, 1},
		{"reassigned", func() { set("SET leaseOwner = :o", map[string]types.AttributeValue{":o": s("w3")}) }, 1},
		{"deleted", func() {
			if _, err := m.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("t"), Key: key}); err != nil {
				t.Fatal(err)
			}
		}, 1},
	}
	for _, st := range steps {
		before := m.Stats()
		st.do()
		after := m.Stats()
		got := after.WriteUnitsByOp[ddbmodel.IndexOp] - before.WriteUnitsByOp[ddbmodel.IndexOp]
		if got != st.want || after.IndexWriteUnits-before.IndexWriteUnits != st.want {
			t.Errorf("%s: index write units %v, want %v", st.name, got, st.want)
		}
		if table := after.WriteUnits - before.WriteUnits - got; table != 1 {
			t.Errorf("%s: table write units %v, want 1 (a lease under 1 KB)", st.name, table)
		}
	}
}
