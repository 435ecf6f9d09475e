package processor

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kcltool/kcltool/kinesisrec"
)

// failureFile is what --on-failure writes for records the worker gave up
// on, so that someone can replay or inspect them after the shard has been
// checkpointed past them.
type failureFile struct {
	App           string       `json:"app"`
	Stream        string       `json:"stream"`
	ShardID       string       `json:"shardId"`
	WorkerID      string       `json:"workerId"`
	FirstSequence position     `json:"firstSequence"`
	LastSequence  position     `json:"lastSequence"`
	Reason        string       `json:"reason"`
	Error         string       `json:"error"`
	ExitCode      int          `json:"exitCode"`
	TimedOut      bool         `json:"timedOut"`
	StderrTail    string       `json:"stderrTail"`
	Attempts      int          `json:"attempts"`
	FailedAt      string       `json:"failedAt"`
	Records       []recordJSON `json:"records"`
}

type position struct {
	SequenceNumber    string `json:"sequenceNumber"`
	SubSequenceNumber int64  `json:"subSequenceNumber"`
}

// recordJSON is a record in the shape handlers read on stdin
// (appendRecordJSON), so that a failure file's records can be fed back to
// the same handler.
type recordJSON struct {
	Data                        []byte `json:"data"`
	PartitionKey                string `json:"partitionKey"`
	SequenceNumber              string `json:"sequenceNumber"`
	SubSequenceNumber           int64  `json:"subSequenceNumber"`
	ApproximateArrivalTimestamp string `json:"approximateArrivalTimestamp,omitempty"`
	ShardID                     string `json:"shardId"`
	ExplicitHashKey             string `json:"explicitHashKey,omitempty"`
}

func toRecordJSON(r kinesisrec.Record) recordJSON {
	return recordJSON{
		Data: r.Payload(), PartitionKey: r.PartitionKey,
		SequenceNumber: r.SequenceNumber, SubSequenceNumber: r.SubSequenceNumber,
		ApproximateArrivalTimestamp: formatArrival(r.ApproximateArrivalTimestamp),
		ShardID:                     r.ShardID, ExplicitHashKey: r.ExplicitHashKey,
	}
}

// newFailureFile describes the records of b that were given up on after res.
func newFailureFile(b Batch, res Result, reason string, at time.Time) failureFile {
	first, last := b.Records[0], b.Records[len(b.Records)-1]
	f := failureFile{
		App: b.App, Stream: b.Stream, ShardID: b.ShardID, WorkerID: b.WorkerID,
		FirstSequence: position{first.SequenceNumber, first.SubSequenceNumber},
		LastSequence:  position{last.SequenceNumber, last.SubSequenceNumber},
		Reason:        reason, ExitCode: res.ExitCode, TimedOut: res.TimedOut,
		StderrTail: res.StderrTail, Attempts: b.Attempt,
		FailedAt: at.UTC().Format(time.RFC3339Nano),
		Records:  make([]recordJSON, len(b.Records)),
	}
	if res.Err != nil {
		f.Error = res.Err.Error()
	}
	for i, r := range b.Records {
		f.Records[i] = toRecordJSON(r)
	}
	return f
}

// fileName is unique per shard and record range and the same when the same
// range is given up on again (after a restart before the checkpoint landed),
// so a repeat overwrites instead of piling up copies.
func (f failureFile) fileName() string {
	safe := strings.NewReplacer("/", "_", string(os.PathSeparator), "_", ":", "_").Replace
	return fmt.Sprintf("%s_%s.%s_%s.%s.json", safe(f.ShardID),
		f.FirstSequence.SequenceNumber, strconv.FormatInt(f.FirstSequence.SubSequenceNumber, 10),
		f.LastSequence.SequenceNumber, strconv.FormatInt(f.LastSequence.SubSequenceNumber, 10))
}

// writeFailureFile writes f into dir atomically and durably: the caller
// checkpoints past the records as soon as it returns, so the file must
// exist whole, or not at all, even after a crash.
func writeFailureFile(dir string, f failureFile) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, ".kcltool-failed-*.tmp")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	path := filepath.Join(dir, f.fileName())
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", err
	}
	// The rename is durable only once the directory is synced.
	d, err := os.Open(dir)
	if err != nil {
		return "", err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return "", err
	}
	return path, nil
}
