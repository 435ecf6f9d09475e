package reset

import (
	"fmt"
	"time"

	"github.com/kcltool/kcltool/leasecore"
)

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// stamp formats times in plans and warnings: UTC, milliseconds, the
// precision of ApproximateArrivalTimestamp.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// describeCheckpoint renders a checkpoint for reasons and warnings, with the
// sub-sequence number when there is one.
func describeCheckpoint(n leasecore.SequenceNumber) string {
	if n.SubSequenceNumber != 0 {
		return fmt.Sprintf("%s/%d", n.SequenceNumber, n.SubSequenceNumber)
	}
	return n.SequenceNumber
}
