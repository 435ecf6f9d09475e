package doctor

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/leasecore"
)

// With CloudWatch data, the capacity check takes the fleet's reads from
// ConsumedReadCapacityUnits and judges them against the provisioned RCU:
// 300 units in a minute is 5 RCU/s, over a table's 2.
func TestDoctorReadCapacityFromCloudWatch(t *testing.T) {
	r := provisionedRigRW(t, 2, 100, time.Second, time.Second).withCloudWatch()
	r.fleet("w1", "w1", "w2", "w2")
	at := r.clock.Now().Add(-time.Minute)
	r.cw.Add("AWS/DynamoDB", "ConsumedReadCapacityUnits", map[string]string{"TableName": r.table}, at, 300)
	r.cw.Add("AWS/DynamoDB", "ConsumedReadCapacityUnits", map[string]string{"TableName": r.table}, at.Add(-time.Minute), 60)
	rep := r.run(func(i int) {
		if i > 0 {
			r.renewAll()
		}
	})
	f := want(t, rep, FindTableCapacity, SeverityCritical, "lease table has 2 RCU but the fleet's scans take about 5.0 read units/s (CloudWatch peak)")
	if !strings.Contains(f.Fix, "raise its RCU to at least 8") {
		t.Errorf("fix %q", f.Fix)
	}
	if f.Evidence.Values["peakConsumedRCU"] != 5 || f.Evidence.Values["provisionedRCU"] != 2 {
		t.Errorf("values %v", f.Evidence.Values)
	}
	c := rep.Capacity
	if c == nil || c.ReadUnitsPerSecond != 5 || c.ReadEstimated || c.ProvisionedRead != 2 || c.ProvisionedWrite != 100 || !c.WriteEstimated {
		t.Errorf("capacity %+v", c)
	}
}

// Without CloudWatch data (none published, or no CloudWatch at all), the
// reads are an estimate, labelled so: the live workers × what one scan
// cost doctor (as DynamoDB answered) ÷ the adaptive taker's interval.
func TestDoctorReadCapacityEstimate(t *testing.T) {
	for _, withCW := range []bool{true, false} {
		r := provisionedRigRW(t, 1, 1000, time.Second, time.Second)
		if withCW {
			r.withCloudWatch()
		}
		owners := make([]string, 150)
		for i := range owners {
			owners[i] = []string{"w1", "w2", "w3"}[i%3]
		}
		r.fleet(owners...)
		rep := r.run(func(i int) {
			if i > 0 {
				r.renewAll()
			}
		})
		f := want(t, rep, FindTableCapacity, SeverityCritical, "lease table has 1 RCU but the fleet's scans take about", "(estimate)")
		perScan := rep.Cost.ReadCapacityUnits / float64(rep.Cost.Scans)
		interval := leasecore.Config{FailoverTime: time.Second}.ScanPacing(150, 3, 1)
		est := 3 * perScan / interval.Seconds()
		if perScan < 1 || f.Evidence.Values["readUnitsPerScan"] != perScan || math.Abs(f.Evidence.Values["estimatedRCU"]-est) > 0.01 {
			t.Errorf("cloudwatch %v: %v RCU a scan, %s interval, estimate %v: values %v", withCW, perScan, interval, est, f.Evidence.Values)
		}
		if _, ok := f.Evidence.Values["peakConsumedRCU"]; ok {
			t.Errorf("cloudwatch %v: a consumed figure without CloudWatch data: %v", withCW, f.Evidence.Values)
		}
		if c := rep.Capacity; c == nil || !c.ReadEstimated || math.Abs(c.ReadUnitsPerSecond-est) > 0.01 {
			t.Errorf("cloudwatch %v: capacity %+v, want the estimate %v", withCW, c, est)
		}
		if !strings.Contains(strings.Join(f.Evidence.Lines, "\n"), "reads (estimate): 3 workers") {
			t.Errorf("lines %q", f.Evidence.Lines)
		}
	}
}
