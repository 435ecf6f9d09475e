// mlchild is a KCL MultiLang record processor for the runner's tests: it
// speaks the protocol the way the KCL's client libraries do, appends each
// record to $OUT as a JSON line, checkpoints after every batch and at the
// shard end, and logs every message it gets to $EVENTS. $MLCHILD_MODE makes
// the child of shard $MLCHILD_SHARD misbehave once (a marker file in
// $MLCHILD_MARKS remembers it did), so that its next child behaves.
// $MLCHILD_SHARDEND=named checkpoints the last record it was given, by its
// sequence and sub-sequence numbers, at the shard end instead of null.
// $MLCHILD_STDERR=nonewline logs a line per record to stderr without a
// newline, as AWS's sample processors do, and one more as it exits.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

type msg struct {
	Action      string          `json:"action"`
	ShardID     string          `json:"shardId"`
	Records     json.RawMessage `json:"records"`
	Error       *string         `json:"error"`
	SeqNum      *string         `json:"sequenceNumber"`
	SubSeq      *int64          `json:"subSequenceNumber"`
	MillisBehnd *int64          `json:"millisBehindLatest"`
}

type record struct {
	Data           string `json:"data"`
	PartitionKey   string `json:"partitionKey"`
	SequenceNumber string `json:"sequenceNumber"`
	SubSequence    int64  `json:"subSequenceNumber"`
	ShardID        string `json:"shardId"`
}

var (
	in    = bufio.NewScanner(os.Stdin)
	shard string
	// last is the last record given, for MLCHILD_SHARDEND=named.
	last *record
)

func main() {
	in.Buffer(make([]byte, 1<<20), 64<<20)
	for in.Scan() {
		var m msg
		if err := json.Unmarshal(in.Bytes(), &m); err != nil {
			fmt.Fprintln(os.Stderr, "mlchild: bad line:", err)
			os.Exit(2)
		}
		if m.Action == "initialize" {
			shard = m.ShardID
			burn()
		}
		event(m.Action)
		switch m.Action {
		case "processRecords":
			processRecords(m)
		case "shardEnded":
			if misbehave("noshardend") {
				status(m.Action)
				continue
			}
			if os.Getenv("MLCHILD_SHARDEND") == "named" && last != nil {
				checkpointAt(&last.SequenceNumber, &last.SubSequence)
				break
			}
			checkpoint(nil)
		case "shutdownRequested":
			checkpoint(nil)
		}
		status(m.Action)
	}
	event("eof")
	if os.Getenv("MLCHILD_STDERR") == "nonewline" {
		fmt.Fprintf(os.Stderr, "mlchild: %s exits", shard)
	}
}

func processRecords(m msg) {
	// MLCHILD_TIMES: log when each processRecords starts (unix ns);
	// MLCHILD_SLEEP: then take that long, a batch in flight.
	if p := os.Getenv("MLCHILD_TIMES"); p != "" {
		if f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintf(f, "start %d %s %d\n", time.Now().UnixNano(), shard, os.Getpid())
			f.Close()
		}
	}
	if d, err := time.ParseDuration(os.Getenv("MLCHILD_SLEEP")); err == nil {
		time.Sleep(d)
	}
	var recs []record
	if err := json.Unmarshal(m.Records, &recs); err != nil {
		fmt.Fprintln(os.Stderr, "mlchild: records:", err)
		os.Exit(2)
	}
	if len(recs) == 0 {
		// An empty page (callProcessRecordsEvenForEmptyRecordList): the
		// KCL sends "records":[] and the page's millisBehindLatest.
		if string(m.Records) == "[]" && m.MillisBehnd != nil {
			event("empty processRecords")
		} else {
			event("malformed empty processRecords " + string(m.Records))
		}
	}
	switch {
	case misbehave("garbage"):
		fmt.Println("this line is not JSON")
		fmt.Println(`{"action": broken`)
	case misbehave("unknown"):
		fmt.Println(`{"action":"dance"}`)
	case misbehave("daemonaction"):
		fmt.Println(`{"action":"processRecords","records":[],"millisBehindLatest":0}`)
	case misbehave("silent"):
		time.Sleep(time.Hour)
	case misbehave("exit"):
		fmt.Fprintln(os.Stderr, "mlchild: exiting mid-batch")
		os.Exit(3)
	case misbehave("badcp"):
		never := "49999999999999999999999999999999999999999999999999999999"
		checkpoint(&never)
	}
	f, err := os.OpenFile(os.Getenv("OUT"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if len(recs) > 0 {
		last = &recs[len(recs)-1]
	}
	var buf []byte
	for _, r := range recs {
		if os.Getenv("MLCHILD_STDERR") == "nonewline" {
			fmt.Fprintf(os.Stderr, "mlchild: record %s ", r.PartitionKey)
		}
		r.ShardID = shard
		b, _ := json.Marshal(r)
		buf = append(append(buf, b...), '\n')
	}
	if _, err := f.Write(buf); err != nil {
		os.Exit(2)
	}
	f.Close()
	// MLCHILD_CHECKPOINT=shutdown: checkpoint only when asked to shut
	// down (a graceful handoff's shutdownRequested), as a processor that
	// checkpoints only there.
	if os.Getenv("MLCHILD_CHECKPOINT") != "shutdown" {
		checkpoint(nil)
	}
}

// checkpoint asks for a checkpoint (nil: the last record delivered) and
// reads the reply, logging an error reply as an event.
func checkpoint(seq *string) { checkpointAt(seq, nil) }

// checkpointAt is checkpoint with a sub-sequence number (nil: none).
func checkpointAt(seq *string, sub *int64) {
	b, _ := json.Marshal(map[string]any{"action": "checkpoint", "sequenceNumber": seq, "subSequenceNumber": sub})
	fmt.Println(string(b))
	if !in.Scan() {
		os.Exit(4)
	}
	var m msg
	if err := json.Unmarshal(in.Bytes(), &m); err != nil || m.Action != "checkpoint" {
		fmt.Fprintln(os.Stderr, "mlchild: expected a checkpoint reply, got", in.Text())
		os.Exit(2)
	}
	if m.Error != nil {
		event("checkpointError " + *m.Error)
	}
}

func status(action string) {
	b, _ := json.Marshal(map[string]string{"action": "status", "responseFor": action})
	fmt.Println(string(b))
}

func event(what string) {
	p := os.Getenv("EVENTS")
	if p == "" {
		return
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	fmt.Fprintf(f, "%s %s %d %s\n", os.Getenv("KCLTOOL_WORKER_ID"), shard, os.Getpid(), what)
	f.Close()
}

// burn spends $MLCHILD_BURN of CPU time (a duration), for the tests of
// the handler CPU metric.
func burn() {
	d, err := time.ParseDuration(os.Getenv("MLCHILD_BURN"))
	if err != nil {
		return
	}
	var ru syscall.Rusage
	x := 0
	for {
		for i := 0; i < 1e6; i++ {
			x += i
		}
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		if time.Duration(ru.Utime.Nano()+ru.Stime.Nano()) >= d || x < 0 {
			return
		}
	}
}

// misbehave reports whether this child should misbehave as mode now: the
// first time only, for the chosen shard.
func misbehave(mode string) bool {
	if os.Getenv("MLCHILD_MODE") != mode || os.Getenv("MLCHILD_SHARD") != shard {
		return false
	}
	mark := filepath.Join(os.Getenv("MLCHILD_MARKS"), shard+"."+mode)
	f, err := os.OpenFile(mark, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return false
	}
	f.Close()
	event("misbehave " + mode)
	return true
}
