package doctor

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/awserr"
	"github.com/kcltool/kcltool/leasecore"
)

// scanLegacy reads a KCL 3.0–3.4 side table, keyed by keyAttr; a missing
// table is no error.
func (d *Doctor) scanLegacy(ctx context.Context, table, keyAttr string) ([]leasecore.NonLeaseItem, error) {
	var out []leasecore.NonLeaseItem
	in := &dynamodb.ScanInput{TableName: aws.String(table)}
	for {
		// Counted apart from the lease table's pages.
		d.meter.note(func(c *ReadCost) { c.LegacyScans++ })
		page, err := d.table.api.Scan(ctx, in)
		if awserr.NotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("scan KCL 3.x table %q: %w", table, err)
		}
		for _, item := range page.Items {
			out = append(out, leasecore.NonLeaseItem{Key: attrS(item, keyAttr), EntityType: leasecore.EntityTypeOf(item), Item: item})
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// tableMigrationAt reads when TableMigration3.5 was last written (mts,
// epoch milliseconds): the bake times run from it. The item always lives
// in <app>-CoordinatorState (TableMigrationStateMachineImpl reads and
// writes it there only); zero when it cannot be read there.
func (d *Doctor) tableMigrationAt(ctx context.Context) (time.Time, error) {
	out, err := d.coordAPI.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(d.coordTables().CoordinatorState),
		Key:       map[string]ddbtypes.AttributeValue{"key": &ddbtypes.AttributeValueMemberS{Value: "TableMigration3.5"}},
	})
	if awserr.NotFound(err) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("read TableMigration3.5: %w", err)
	}
	n, ok := out.Item["mts"].(*ddbtypes.AttributeValueMemberN)
	if !ok {
		return time.Time{}, nil
	}
	ms, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return time.Time{}, nil
	}
	return time.UnixMilli(ms).UTC(), nil
}
