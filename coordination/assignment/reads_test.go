package assignment

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/testenv/kcl3fleet"
	"github.com/kcltool/kcltool/leasecore"
)

// callLog records each call's table and the capacity op its context
// carries.
type callLog struct {
	coordination.WriteAPI
	mu    sync.Mutex
	calls []string
}

func (c *callLog) add(ctx context.Context, op, table string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, op+" "+table+" "+leasecore.CapacityOpOf(ctx))
}

func (c *callLog) Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	c.add(ctx, "Scan", aws.ToString(in.TableName))
	return c.WriteAPI.Scan(ctx, in, opts...)
}

func (c *callLog) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.add(ctx, "UpdateItem", aws.ToString(in.TableName))
	return c.WriteAPI.UpdateItem(ctx, in, opts...)
}

func (c *callLog) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.add(ctx, "GetItem", aws.ToString(in.TableName))
	return c.WriteAPI.GetItem(ctx, in, opts...)
}

// One run reads the lease table with one scan, which yields the leases
// and the metrics items together (DynamoDBLeaseTableDao.scanEntities), and
// scans <app>-WorkerMetricStats too only until the table migration is
// COMPLETE (MigrationAwareLAMDataManager.shouldScanLegacyTable). Its only
// writes are the lease writes, each under its capacity op.
func TestRunReadsOnceAndTagsItsCalls(t *testing.T) {
	for _, tc := range []struct {
		kind kcl3fleet.Kind
		want []string
	}{
		{kcl3fleet.NewApp, []string{"Scan lease leader_scan"}},
		{kcl3fleet.SideTables, []string{"Scan lease leader_scan", "Scan metrics leader_scan"}},
	} {
		t.Run(tc.kind.String(), func(t *testing.T) {
			r := newRig(t, tc.kind, Config{}, 4)
			r.join("a", "b")
			log := &callLog{WriteAPI: r.f.DDB.(coordination.WriteAPI)}
			m := NewManager(log, r.f.Tables, Config{}, r.clk, nil)
			res, err := m.RunOnce(r.ctx, r.st)
			if err != nil || res.Assigned != 4 || res.Active != 2 {
				t.Fatalf("run %+v, %v: want 4 leases assigned to 2 active workers", res, err)
			}
			name := map[string]string{r.f.Tables.Lease: "lease", r.f.Tables.WorkerMetrics: "metrics"}
			var reads []string
			writes := 0
			for _, c := range log.calls {
				f := strings.Fields(c)
				op, table, capOp := f[0], f[1], f[2]
				switch op {
				case "UpdateItem":
					if table != r.f.Tables.Lease || capOp != leasecore.OpAssign {
						t.Fatalf("write %q: want an assign on the lease table", c)
					}
					writes++
				default:
					reads = append(reads, op+" "+name[table]+" "+capOp)
				}
			}
			if len(reads) != len(tc.want) || writes != 4 {
				t.Fatalf("reads %v and %d writes; want %v and 4", reads, writes, tc.want)
			}
			for i := range reads {
				if reads[i] != tc.want[i] {
					t.Fatalf("reads %v, want %v", reads, tc.want)
				}
			}
		})
	}
}
