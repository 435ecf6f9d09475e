package runner

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/internal/testenv/testfixtures"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
	"github.com/kcltool/kcltool/runner/processor"
)

// f5Key is the lease of testdata/kcl/f5-multistream.json: stream "orders"
// of a KCL multi-stream application, owned by worker-c, counter 64.
const f5Key = "123456789012:orders:1700000000:shardId-000000000007"

// seedF5 puts the KCL multi-stream lease fixture into the table; without
// an owner when unowned is set, so that any taker would take it at once.
func seedF5(t *testing.T, s stack, unowned bool) {
	t.Helper()
	item, err := leasecore.UnmarshalItemJSON(testfixtures.Read(t, "f5-multistream.json"))
	if err != nil {
		t.Fatal(err)
	}
	if unowned {
		delete(item, leasecore.AttrLeaseOwner)
	}
	if _, err := s.ddb.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item}); err != nil {
		t.Fatal(err)
	}
}

// putTo writes one record per key to stream, data "stream/key", and
// returns the sequence numbers.
func putTo(t *testing.T, kin *kinesis.Client, stream string, keys ...string) map[string]bool {
	t.Helper()
	entries := make([]kintypes.PutRecordsRequestEntry, len(keys))
	for i, k := range keys {
		entries[i] = kintypes.PutRecordsRequestEntry{PartitionKey: aws.String(k), Data: []byte(stream + "/" + k)}
	}
	out, err := kin.PutRecords(context.Background(), &kinesis.PutRecordsInput{StreamName: aws.String(stream), Records: entries})
	if err != nil || aws.ToInt32(out.FailedRecordCount) != 0 {
		t.Fatalf("put to %s: %v", stream, err)
	}
	seqs := map[string]bool{}
	for _, r := range out.Records {
		seqs[aws.ToString(r.SequenceNumber)] = true
	}
	return seqs
}

// Two --stream flags: the worker keys its leases the KCL's multi-stream
// way, reads each stream's shards from that stream only, checkpoints each
// lease with its own stream's sequence numbers, and never takes the
// (expired) lease of a stream it was not given.
func TestMultiStreamWorkerReadsOnlyItsStreams(t *testing.T) {
	s := newStack(t, 2) // stream A
	b := emulator.Name(t, "b")
	emulator.CreateStream(t, s.kin, b, 1)
	emulator.CreateLeaseTable(t, s.ddb, s.table)
	seedF5(t, s, false) // worker-c never renews it: it expires after 1.5s
	seqsA := putTo(t, s.kin, s.stream, keys("a", 10)...)
	seqsB := putTo(t, s.kin, b, keys("b", 5)...)

	out := outFile(t)
	cfg := s.config(t, "w1", out, processor.ShellCommand(`cat >> "$OUT.$KCLTOOL_STREAM"`)...)
	cfg.Stream, cfg.Streams = reshard.Stream{}, []reshard.Stream{{Name: s.stream}, {Name: b}}
	r := start(t, s, cfg)
	eventually(t, 30*time.Second, "every record of both streams", func() bool {
		return len(readHandled(t, out+"."+s.stream)) == 10 && len(readHandled(t, out+"."+b)) == 5
	})
	for stream, n := range map[string]int{s.stream: 10, b: 5} {
		for _, h := range readHandled(t, out+"."+stream) {
			if !strings.HasPrefix(h.text(), stream+"/") {
				t.Fatalf("handler of stream %s got record %q", stream, h.text())
			}
		}
		_ = n
	}
	time.Sleep(2 * time.Second) // the fixture lease has expired by now: room for a wrong take
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}

	ls := leases(t, s)
	if f5 := ls[f5Key]; f5.LeaseOwner != "worker-c" || f5.LeaseCounter != 64 {
		t.Errorf("the other stream's lease was written: owner %q counter %d", f5.LeaseOwner, f5.LeaseCounter)
	}
	perStream := map[string]int{}
	for key, l := range ls {
		if key == f5Key {
			continue
		}
		id, shard, ok := leasecore.ParseMultiStreamKey(key)
		if !ok {
			t.Fatalf("lease %q is not a multi-stream key", key)
		}
		name, _ := reshard.StreamIDName(id)
		name = name[strings.IndexByte(name, ':')+1:]
		if l.StreamName != id || l.ShardID != shard {
			t.Errorf("lease %q: streamName %q shardId %q, want %q and %q", key, l.StreamName, l.ShardID, id, shard)
		}
		seqs := map[string]map[string]bool{s.stream: seqsA, b: seqsB}[name]
		if seqs == nil {
			t.Fatalf("lease %q of an unknown stream %q", key, name)
		}
		if cp := l.Checkpoint.SequenceNumber; !leasecore.IsSentinel(cp) && !seqs[cp] {
			t.Errorf("lease %q checkpointed %s, not a sequence number of stream %s", key, cp, name)
		}
		perStream[name]++
	}
	if perStream[s.stream] != 2 || perStream[b] != 1 {
		t.Errorf("leases per stream %v, want 2 of %s and 1 of %s", perStream, s.stream, b)
	}
}

// One --stream on a KCL multi-stream table runs in multi-stream mode; with
// the single-stream mode asked for it is refused with a clear error and
// nothing written. Two streams on a single-stream table are refused too.
func TestStreamModeMustMatchTheTable(t *testing.T) {
	t.Run("one stream joins a multi-stream table", func(t *testing.T) {
		s := newStack(t, 1)
		emulator.CreateLeaseTable(t, s.ddb, s.table)
		seedF5(t, s, true)
		out := outFile(t)
		putTo(t, s.kin, s.stream, keys("a", 3)...)
		r := start(t, s, s.config(t, "w1", out))
		eventually(t, 30*time.Second, "the stream's records", func() bool { return len(readHandled(t, out)) == 3 })
		if err := r.stop(t); err != nil {
			t.Fatal(err)
		}
		ls := leases(t, s)
		if f5 := ls[f5Key]; f5.LeaseOwner != "" || f5.LeaseCounter != 64 {
			t.Errorf("the other stream's unowned lease was written: owner %q counter %d", f5.LeaseOwner, f5.LeaseCounter)
		}
		for key := range ls {
			if _, _, ok := leasecore.ParseMultiStreamKey(key); !ok {
				t.Errorf("single-stream lease %q written into a multi-stream table", key)
			}
		}
		if len(ls) != 2 {
			t.Errorf("leases %v, want the fixture's and one of the stream", len(ls))
		}
	})
	for _, tc := range []struct {
		name    string
		seed    func(t *testing.T, s stack)
		mode    StreamMode
		streams int
		want    string
		// said is what cmd prints: the settings said as flags.
		said string
	}{
		{"single-stream mode on a multi-stream table", func(t *testing.T, s stack) { seedF5(t, s, true) }, StreamModeSingle, 1, "is a KCL multi-stream table",
			"run in multi-stream mode (leave out --multi-stream=false) or use another --table"},
		{"two streams on a single-stream table", seedSingle, StreamModeAuto, 2, "is a single-stream table",
			"(2 --stream flags) cannot use it: the KCL does not convert one into the other; use a new --table for the multi-stream application, or run one --stream without --multi-stream"},
		{"--multi-stream on a single-stream table", seedSingle, StreamModeMulti, 1, "is a single-stream table", "(--multi-stream) cannot use it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack(t, 1)
			emulator.CreateLeaseTable(t, s.ddb, s.table)
			tc.seed(t, s)
			before := leases(t, s)
			cfg := s.config(t, "w1", outFile(t))
			cfg.StreamMode = tc.mode
			if tc.streams == 2 {
				b := emulator.Name(t, "b")
				emulator.CreateStream(t, s.kin, b, 1)
				cfg.Streams = []reshard.Stream{{Name: s.stream}, {Name: b}}
			}
			w, err := NewWorker(cfg, s.ddb, s.kin)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err = w.Run(ctx)
			var mse *MultiStreamTableError
			if !errors.As(err, &mse) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run: %v; want a *MultiStreamTableError saying %q", err, tc.want)
			}
			if strings.Contains(mse.Reason, "--") { // the table's name has the test's
				t.Errorf("the error names a flag: %v", err)
			}
			if said := mse.Say(func(s string) string { return "--" + s }); !strings.Contains(said, tc.said) {
				t.Errorf("said as flags: %s\nwant %q in it", said, tc.said)
			}
			after := leases(t, s)
			if len(after) != len(before) {
				t.Fatalf("leases written: %d before, %d after", len(before), len(after))
			}
			for k, l := range before {
				if after[k].LeaseCounter != l.LeaseCounter || after[k].LeaseOwner != l.LeaseOwner {
					t.Fatalf("lease %s written", k)
				}
			}
		})
	}
}

func seedSingle(t *testing.T, s stack) {
	t.Helper()
	if _, err := leasecore.CreateLease(context.Background(), s.ddb, s.table, leasecore.Lease{
		LeaseKey: "shardId-000000000000", Checkpoint: leasecore.SequenceNumber{SequenceNumber: leasecore.TRIM_HORIZON},
	}); err != nil {
		t.Fatal(err)
	}
}

// A single-stream worker never takes a multi-stream lease that turns up
// in its table later, however long it stays unowned.
func TestSingleStreamWorkerNeverTakesMultiStreamLeases(t *testing.T) {
	s := newStack(t, 1)
	out := outFile(t)
	r := start(t, s, s.config(t, "w1", out))
	eventually(t, 20*time.Second, "the worker to hold its lease", func() bool {
		l, ok := leasesIfTable(t, s)["shardId-000000000000"]
		return ok && l.LeaseOwner == "w1"
	})
	seedF5(t, s, true)
	time.Sleep(3 * time.Second) // ten taker runs
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	if f5 := leases(t, s)[f5Key]; f5.LeaseOwner != "" || f5.LeaseCounter != 64 {
		t.Fatalf("the multi-stream lease was written: owner %q counter %d", f5.LeaseOwner, f5.LeaseCounter)
	}
}

// leasesIfTable is leases, empty while the table does not exist yet.
func leasesIfTable(t *testing.T, s stack) map[string]leasecore.Lease {
	t.Helper()
	res, err := leasecore.ScanTable(context.Background(), s.ddb, s.table, leasecore.ScanOptions{ConsistentRead: true})
	if err != nil {
		return nil
	}
	m := map[string]leasecore.Lease{}
	for _, l := range res.Leases {
		m[l.LeaseKey] = l
	}
	return m
}
