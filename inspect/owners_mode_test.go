package inspect

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// TestOwnersMode: `leases owners` carries the mode a `kcltool run` worker
// would follow on the table (issue 25): taking on a KCL 2.x table, where
// ReadKCL3 reads nothing else, and the leader's assignment on a KCL 3.x
// one (index and Migration3.0 item in the lease table, KCL 3.5's layout).
func TestOwnersMode(t *testing.T) {
	ctx := context.Background()
	ddb := emulator.DynamoDB(t)
	lease := func(table string) {
		l := leasecore.Lease{LeaseKey: "shardId-000000000000", LeaseOwner: "w1", LeaseCounter: 1}
		l.Checkpoint.SequenceNumber = leasecore.TRIM_HORIZON
		if _, err := leasecore.CreateLease(ctx, ddb, table, l); err != nil {
			t.Fatal(err)
		}
	}
	read := func(table string) (*Owners, *KCL3) {
		listing, err := ListLeases(ctx, ddb, table, ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st, k, err := ReadKCL3State(ctx, ddb, coordination.DefaultTables(table, table), len(listing.NonLeases))
		if err != nil || st == nil {
			t.Fatalf("state %v: %v", st, err)
		}
		return OwnersOf(listing).WithKCL3(k).WithMode(st), k
	}

	v2 := emulator.Name(t, "mode2")
	emulator.CreateLeaseTable(t, ddb, v2)
	lease(v2)
	o, k := read(v2)
	if k != nil || o.Mode == nil || o.Mode.Assignment != leasecore.AssignByTaking || o.Mode.Layout != coordination.LayoutNone ||
		!strings.HasPrefix(o.Mode.Reason, "KCL 2.x (") {
		t.Errorf("KCL 2.x table: kcl3 %+v, mode %+v", k, o.Mode)
	}

	v3 := emulator.Name(t, "mode3")
	emulator.CreateKCL3LeaseTable(t, ddb, v3)
	lease(v3)
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	if _, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(v3), Item: map[string]types.AttributeValue{
		"leaseKey": s("Migration3.0"), "entityType": s("CLIENT_VERSION_MIGRATION"), "cv": s(coordination.ClientVersion3X), "mb": s("java-1"),
		"mts": &types.AttributeValueMemberN{Value: "1767225600000"}}}); err != nil {
		t.Fatal(err)
	}
	o, _ = read(v3)
	m := o.Mode
	if m == nil || m.Assignment != leasecore.AssignByLeader || m.ClientVersion != coordination.ClientVersion3X || m.Layout != coordination.LayoutLeaseTable ||
		!strings.Contains(m.Reason, "cv="+coordination.ClientVersion3X) || !strings.Contains(m.Reason, "index "+leasecore.KCL3IndexName+" ACTIVE") {
		t.Errorf("KCL 3.x table: mode %+v", m)
	}
}
