package cmd

import (
	"strings"
	"testing"

	"github.com/kcltool/kcltool/leasecore"
)

// Against the local servers (AWS_ENDPOINT_URL_DYNAMODB and _KINESIS on
// 127.0.0.1, no CloudWatch endpoint, no --no-cloudwatch), doctor skips
// CloudWatch with one info line instead of a failure against the real
// service; and a lease table whose fleet stopped cleanly (no owners) is
// no-workers, a warning, so doctor exits 3.
func TestDoctorOnLocalServersStoppedFleet(t *testing.T) {
	t.Parallel()
	table := seedTable(t,
		leasecore.EncodeLease(leasecore.Lease{LeaseKey: "shardId-000000000000", LeaseCounter: 9, Checkpoint: leasecore.SequenceNumber{SequenceNumber: "49590338271490256608559692538361571095921575989136588898"}}),
		leasecore.EncodeLease(leasecore.Lease{LeaseKey: "shardId-000000000001", LeaseCounter: 9, Checkpoint: leasecore.SequenceNumber{SequenceNumber: leasecore.TRIM_HORIZON}}))
	out, errOut, code := runBinary(t, nil, "doctor", "--app", table, "--failover-time", "1s", "--window", "1s")
	if code != 3 {
		t.Errorf("exit %d, want 3 (no-workers is a warning)\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var cw []string
	for _, l := range strings.Split(out+errOut, "\n") {
		if strings.Contains(strings.ToLower(l), "cloudwatch") {
			cw = append(cw, l)
		}
	}
	if len(cw) != 1 || !strings.Contains(cw[0], "cloudwatch-skipped") || !strings.Contains(cw[0], "the endpoints are local") {
		t.Errorf("want one info line on CloudWatch, saying the endpoints are local; got %q\nstdout:\n%s\nstderr:\n%s", cw, out, errOut)
	}
	if !strings.Contains(out, "no-workers") || strings.Contains(out, "unassigned-leases") {
		t.Errorf("want no-workers and no unassigned-leases:\n%s", out)
	}
}
