package retrieval

import (
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/kinesisrec"
	"github.com/kcltool/kcltool/leasecore"
)

// Page is what one read gave (a GetRecords answer, or a SubscribeToShard
// event), ready for the batcher: de-aggregated and with the records at or
// below the start checkpoint dropped.
type Page struct {
	Records      []kinesisrec.Record
	Bytes        int64
	Raw          int // Kinesis records in the answer, before de-aggregation
	MillisBehind int64
	// End: the shard is closed and this was its last page (no next
	// iterator). Children are the shards that continue it.
	End      bool
	Children []types.ChildShard
	// Received is when the read's answer (or event) arrived: kcltool's own
	// added latency runs from it to the batch's handling.
	Received time.Time
}

// PageRecords turns the records of one read (a GetRecords answer or a
// SubscribeToShard event) into handler records: de-aggregated, KPL
// sub-records outside the hash range dropped, and while *filtering those at
// or below start dropped.
func PageRecords(all []kinesisrec.Record, hr leasecore.HashRange, start leasecore.SequenceNumber, filtering *bool, log *slog.Logger) ([]kinesisrec.Record, int64) {
	records, rep := kinesisrec.Deaggregate(all, hr)
	for _, err := range rep.Broken {
		log.Warn("broken KPL aggregate: kept the sub-records before the fault, as KCL does", "err", err)
	}
	if rep.OutOfRange > 0 {
		log.Debug("dropped KPL aggregates with sub-records outside the shard's hash range", "aggregates", rep.OutOfRange)
	}
	if *filtering && len(records) > 0 {
		records = kinesisrec.AfterCheckpoint(records, start)
		// Records come in order: once one is past the checkpoint, all
		// later ones are.
		*filtering = len(records) == 0
	}
	var bytes int64
	for i := range records {
		bytes += int64(records[i].DataLen())
	}
	return records, bytes
}
