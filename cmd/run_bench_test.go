package cmd

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// Benchmark sizes. kinesis-local slows down as a shard fills, so the records
// are spread over many small shards.
const (
	benchShards         = 20
	benchRecordsByShard = 2000
	benchRecordSize     = 100
)

// TestBenchRun is `make bench`'s figure for `kcltool run`: throughput and
// CPU per 100k records of `kcltool run --exec 'cat >/dev/null'` at batch
// sizes 1000 and 10000, next to vmware-go-kcl-v2 v1.0.0 with a no-op
// in-process processor and to a bare SDK GetRecords loop, all reading the
// same pre-filled stream from TRIM_HORIZON in the same run: 20 shards of
// 2,000 records (batches of at most 2,000), then 4 shards of 10,000 (whole
// batches of 10,000); then put-to-handler latency at the tip. kcltool's CPU is printed whole and
// split into its own and its handler processes' (sh and cat), which it
// cannot make cheaper. It only runs with KCLTOOL_BENCH=1: speed targets
// live here, never in unit tests.
func TestBenchRun(t *testing.T) {
	if os.Getenv("KCLTOOL_BENCH") == "" {
		t.Skip("benchmark: run with KCLTOOL_BENCH=1 (make bench)")
	}
	for _, kv := range emulator.Env(t) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v) // for the in-process peer's SDK config
	}
	bin := kcltoolBinary(t)
	kin := emulator.Kinesis(t)
	compareRun(t, bin, kin, newBenchStream(t, kin, "bench", benchShards, benchRecordsByShard), "run", []int{1000, 10000}, true)
	// A batch of 10,000 needs shards with that many records, which
	// kinesis-local fills slowly: fewer of them, the same total. The bare
	// loop is left out there: it reads each shard in one answer, too few to
	// measure from a tenth of the records on.
	compareRun(t, bin, kin, newBenchStream(t, kin, "bench-big", 4, 10000), "run-4x10000", []int{10000}, false)
	for _, idle := range []time.Duration{time.Second, 200 * time.Millisecond} {
		p50, p99, n := benchLatency(t, bin, kin, idle)
		fmt.Printf("bench run-latency: --idle-between-reads %s: put-to-handler p50 %s, p99 %s over %d records\n",
			idle, p50.Round(time.Millisecond), p99.Round(time.Millisecond), n)
	}
}

// benchStream is a pre-filled stream: shards × perShard records, and each
// shard's last sequence number.
type benchStream struct {
	name             string
	shards, perShard int
	last             map[string]string
}

func (b benchStream) total() int { return b.shards * b.perShard }

func newBenchStream(t *testing.T, kin *kinesis.Client, prefix string, shards, perShard int) benchStream {
	t.Helper()
	b := benchStream{name: emulator.Name(t, prefix), shards: shards, perShard: perShard}
	emulator.CreateStream(t, kin, b.name, int32(shards))
	started := time.Now()
	b.last = fillStream(t, kin, b.name, perShard)
	t.Logf("filled %d shards with %d records of %d bytes each in %s", shards, perShard, benchRecordSize, time.Since(started).Round(time.Millisecond))
	return b
}

// benchResult is one contender's round.
type benchResult struct {
	name string
	secs float64
	cpu  float64
	// handlers is the part of cpu spent in handler processes.
	handlers float64
}

// compareRun measures kcltool at each batch size, the peer and (withBare)
// the bare loop on stream, three rounds each, and prints each one's best
// round as "bench LABEL-throughput" and kcltool's ratios as
// "bench LABEL-cpu-ratio".
func compareRun(t *testing.T, bin string, kin *kinesis.Client, stream benchStream, label string, batches []int, withBare bool) {
	t.Helper()
	const peerName, bareName = "vmware-go-kcl-v2 v1.0.0 (in-process no-op)", "bare SDK GetRecords loop (in-process)"
	total := stream.total()
	var results []benchResult
	var ours []string
	for _, batch := range batches {
		ours = append(ours, fmt.Sprintf("kcltool run --batch-size %d", batch))
	}
	for round := range 3 {
		for i, batch := range batches {
			secs, cpu := benchKcltool(t, bin, stream, batch, round)
			results = append(results, benchResult{ours[i], secs, cpu.total(), cpu.children})
			t.Logf("%s: %.2fs, %.2f CPU-s (handlers %.2f)", ours[i], secs, cpu.total(), cpu.children)
		}
		secs, cpu := benchPeer(t, stream.name, int64(total), round)
		results = append(results, benchResult{peerName, secs, cpu, 0})
		t.Logf("peer: %.2fs, %.2f CPU-s", secs, cpu)
		if withBare {
			secs, cpu = benchBareLoop(t, kin, stream)
			results = append(results, benchResult{bareName, secs, cpu, 0})
			t.Logf("bare loop: %.2fs, %.2f CPU-s", secs, cpu)
		}
	}
	best := map[string]benchResult{}
	for _, r := range results {
		if b, ok := best[r.name]; !ok || r.cpu < b.cpu {
			best[r.name] = r
		}
	}
	per100k := func(cpu float64) float64 { return cpu / float64(total) * 100000 }
	peer, bare := best[peerName], best[bareName]
	names := append(append([]string{}, ours...), peerName)
	if withBare {
		names = append(names, bareName)
	}
	for _, name := range names {
		r := best[name]
		split := ""
		if slices.Contains(ours, name) {
			split = fmt.Sprintf(" (kcltool itself %.3f, its handler processes %.3f)", per100k(r.cpu-r.handlers), per100k(r.handlers))
		}
		fmt.Printf("bench %s-throughput: %s: %d records (%d shards) in %.2fs from start = %.0f records/s; %.3f CPU-seconds per 100k records after start-up%s\n",
			label, name, total, stream.shards, r.secs, float64(total)/r.secs, per100k(r.cpu), split)
	}
	for _, name := range ours {
		r := best[name]
		vsBare := ""
		if withBare {
			vsBare = fmt.Sprintf(" (%.2fx the bare loop)", (r.cpu-r.handlers)/bare.cpu)
		}
		fmt.Printf("bench %s-cpu-ratio: %s vs peer: %.2fx CPU per record with the handler processes (goal <= 0.60x), %.2fx for kcltool itself%s, %.2fx throughput\n",
			label, name, r.cpu/peer.cpu, (r.cpu-r.handlers)/peer.cpu, vsBare, (float64(total)/r.secs)/(float64(total)/peer.secs))
	}
}

// fillStream writes perShard records to every shard (explicit hash keys
// pick the shard) and returns each shard's last sequence number.
func fillStream(t *testing.T, kin *kinesis.Client, stream string, perShard int) map[string]string {
	t.Helper()
	shards, err := kin.ListShards(context.Background(), &kinesis.ListShardsInput{StreamName: aws.String(stream)})
	if err != nil {
		t.Fatal(err)
	}
	payload := strings.Repeat("x", benchRecordSize)
	var mu sync.Mutex
	last := map[string]string{}
	var wg sync.WaitGroup
	errs := make(chan error, len(shards.Shards))
	for _, sh := range shards.Shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hashKey := aws.ToString(sh.HashKeyRange.StartingHashKey)
			for sent := 0; sent < perShard; {
				n := min(500, perShard-sent)
				entries := make([]kintypes.PutRecordsRequestEntry, n)
				for i := range entries {
					entries[i] = kintypes.PutRecordsRequestEntry{Data: []byte(payload), PartitionKey: aws.String(strconv.Itoa(sent + i)), ExplicitHashKey: aws.String(hashKey)}
				}
				out, err := kin.PutRecords(context.Background(), &kinesis.PutRecordsInput{StreamName: aws.String(stream), Records: entries})
				if err != nil {
					errs <- err
					return
				}
				if aws.ToInt32(out.FailedRecordCount) > 0 {
					continue // kinesis-local never fails records; AWS would
				}
				sent += n
				mu.Lock()
				last[aws.ToString(sh.ShardId)] = aws.ToString(out.Records[n-1].SequenceNumber)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return last
}

// benchKcltool runs the binary until every shard is checkpointed at its last
// record. It returns the wall time from start, and the CPU time that it and
// its handlers used from the moment a tenth of the records had been handled
// (start-up excluded) to the end, scaled to all records. The tenth is seen
// on the metrics endpoint (scraped only until then, and once at the end:
// scrapes cost kcltool CPU), the end in the lease table. CPU comes from the
// same scrapes: process_cpu_seconds_total and the handlers'
// kcltool_shard_handler_cpu_seconds_total, both to the microsecond.
func benchKcltool(t *testing.T, bin string, stream benchStream, batch int, round int) (secs float64, cpu cpuTimes) {
	t.Helper()
	app := fmt.Sprintf("%s-k%d-%d", stream.name, batch, round)
	secs, cpu, _ = benchKcltoolRun(t, bin, stream, app, fmt.Sprintf("kcltool run --batch-size %d, round %d", batch, round+1),
		"--app", app, "--stream", stream.name, "--initial-position", "TRIM_HORIZON", "--batch-size", strconv.Itoa(batch),
		"--exec", "cat >/dev/null")
	return secs, cpu
}

// benchKcltoolRun is benchKcltool for any `kcltool run` command line (args,
// after `run`; app is its lease table), measured the same way; label names
// it in the memory line. It also returns the CPU window: when it began and
// the factor its figures were scaled by to all records.
func benchKcltoolRun(t *testing.T, bin string, stream benchStream, app, label string, args ...string) (secs float64, cpu cpuTimes, window benchWindow) {
	t.Helper()
	last := stream.last
	ddb := emulator.DynamoDB(t)
	port := freePort(t)
	cmd := exec.Command(bin, append([]string{"run", "--create-table", "--kcl-version", "2", "--log-format", "json",
		"--metrics-addr", fmt.Sprintf("127.0.0.1:%d", port)}, args...)...)
	cmd.Env = append(os.Environ(), emulator.Env(t)...)
	logs := &lockedBuffer{}
	cmd.Stderr = logs
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	total := float64(stream.total())
	var from workerFigures
	var fromProc cpuTimes
	for {
		if time.Since(begin) > 3*time.Minute {
			t.Fatalf("kcltool did not finish in 3 minutes:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
		if from.records < total/10 {
			if f, ok := scrapeWorker(port); ok && f.records >= total/10 {
				from, fromProc = f, procCPU(t, cmd.Process.Pid)
				window.from = time.Now()
			}
			continue
		}
		res, err := leasecore.ScanTable(context.Background(), ddb, app, leasecore.ScanOptions{ConsistentRead: true})
		if err != nil {
			t.Fatal(err)
		}
		done := len(res.Leases) == len(last)
		for _, l := range res.Leases {
			done = done && l.Checkpoint.SequenceNumber == last[l.LeaseKey]
		}
		if done {
			secs = time.Since(begin).Seconds()
			// kcltool's own figures are to the microsecond; /proc's, in clock
			// ticks, are logged as a cross-check.
			proc := procCPU(t, cmd.Process.Pid).sub(fromProc)
			to, ok := scrapeWorker(port)
			if !ok {
				t.Fatalf("the metrics endpoint stopped answering:\n%s", logs.String())
			}
			cpu = to.cpu.sub(from.cpu)
			t.Logf("%s: from record %.0f on, CPU-s from the metrics %.3f + %.3f handlers, from /proc %.2f + %.2f", label, from.records, cpu.self, cpu.children, proc.self, proc.children)
			window.scale = total / (total - from.records)
			cpu = cpu.scale(window.scale)
			fmt.Printf("bench run-memory: %s: peak RSS %s\n", label, peakRSS(cmd.Process.Pid))
			return secs, cpu, window
		}
	}
}

// benchWindow is when a run's CPU window began and the factor its figures
// were scaled by to all records.
type benchWindow struct {
	from  time.Time
	scale float64
}

// workerFigures is what the bench reads off a worker's metrics endpoint.
type workerFigures struct {
	records  float64  // kcltool_shard_records_total, summed
	cpu      cpuTimes // process_cpu_seconds_total, and kcltool_shard_handler_cpu_seconds_total summed
	reads    float64  // kcltool_shard_getrecords_total, summed
	renewals float64  // kcltool_worker_lease_renewals_total
	held     float64  // kcltool_worker_leases_held
}

// scrapeWorker reads the metrics endpoint; ok is false while it does not
// answer.
func scrapeWorker(port int) (f workerFigures, ok bool) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		return f, false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		name, _, _ := strings.Cut(line, "{")
		v, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		switch {
		case name == "kcltool_shard_records_total":
			f.records += v
		case name == "kcltool_shard_handler_cpu_seconds_total":
			f.cpu.children += v
		case strings.HasPrefix(line, "process_cpu_seconds_total "):
			f.cpu.self = v
		case name == "kcltool_shard_getrecords_total":
			f.reads += v
		case name == "kcltool_worker_lease_renewals_total":
			f.renewals = v
		case name == "kcltool_worker_leases_held":
			f.held = v
		}
	}
	return f, true
}

// cpuTimes is a process's CPU time in seconds: its own, and that of its
// reaped children (the handler processes).
type cpuTimes struct{ self, children float64 }

func (c cpuTimes) total() float64 { return c.self + c.children }

func (c cpuTimes) sub(d cpuTimes) cpuTimes { return cpuTimes{c.self - d.self, c.children - d.children} }

func (c cpuTimes) scale(f float64) cpuTimes { return cpuTimes{c.self * f, c.children * f} }

// procCPU reads a process's CPU time, its reaped children's apart.
func procCPU(t *testing.T, pid int) cpuTimes {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	// Fields 14-17 of stat: utime stime cutime cstime, in clock ticks; here
	// counted from field 3 (state) as index 0.
	var ticks [4]float64
	for i, f := range fields[11:15] {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatal(err)
		}
		ticks[i] = v
	}
	return cpuTimes{self: (ticks[0] + ticks[1]) / clockTicks, children: (ticks[2] + ticks[3]) / clockTicks}
}

// peakRSS reads a process's VmHWM from /proc.
func peakRSS(pid int) string {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// clockTicks is USER_HZ, 100 on every Linux that Go supports.
const clockTicks = 100

// benchPeer runs vmware-go-kcl-v2 in this process until it counted every
// record, and returns the wall time and this process's CPU time from a
// tenth of the records to the end, scaled to all records (the test does
// nothing else meanwhile).
func benchPeer(t *testing.T, stream string, total int64, round int) (secs, cpu float64) {
	t.Helper()
	return benchPeerPages(t, stream, total, round, 10000)
}

// benchPeerPages is benchPeer with GetRecords pages of at most maxRecords.
func benchPeerPages(t *testing.T, stream string, total int64, round, maxRecords int) (secs, cpu float64) {
	t.Helper()
	var count, cachedListShards atomic.Int64
	begin := time.Now()
	app := fmt.Sprintf("%s-peer-%d", stream, round)
	if maxRecords != 10000 {
		app = fmt.Sprintf("%s-peer%d-%d", stream, maxRecords, round)
	}
	w, err := startPeer(app, stream, emulator.KinesisEndpoint(t), emulator.DynamoDBEndpoint(t), maxRecords, &count, &cachedListShards)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Shutdown()
	secs, cpu = measureInProcess(t, "the peer", begin, &count, total, nil)
	t.Logf("peer: %d ListShards answered from memory", cachedListShards.Load())
	return secs, cpu
}

// measureInProcess waits until count reaches total (or failed yields an
// error) and returns the wall time since begin and this process's CPU time
// from a tenth of total to the end, scaled to all of it: the window of the
// in-process contenders, which do nothing else meanwhile.
func measureInProcess(t *testing.T, what string, begin time.Time, count *atomic.Int64, total int64, failed <-chan error) (secs, cpu float64) {
	t.Helper()
	from, fromCPU := int64(-1), 0.0
	for {
		n := count.Load()
		if from < 0 && n >= total/10 {
			from, fromCPU = n, selfCPU(t)
		}
		if n >= total {
			return time.Since(begin).Seconds(), (selfCPU(t) - fromCPU) * float64(total) / float64(total-from)
		}
		if time.Since(begin) > 3*time.Minute {
			t.Fatalf("%s counted %d of %d records in 3 minutes", what, n, total)
		}
		// Polling costs this process CPU too: as seldom as the kcltool
		// runs are polled.
		select {
		case err := <-failed:
			t.Fatal(err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// benchBareLoop is the floor the issue measures kcltool against: one
// goroutine per shard calling the SDK's GetRecords from TRIM_HORIZON until
// it has every record of its shard, with the SDK's own decoder, and nothing
// else (no leases, checkpoints, batching or handlers). It returns the wall
// time and this process's CPU time from a tenth of the records to the end,
// scaled to all records, as benchPeer does.
func benchBareLoop(t *testing.T, kin *kinesis.Client, stream benchStream) (secs, cpu float64) {
	t.Helper()
	ctx := context.Background()
	shards, err := kin.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String(stream.name)})
	if err != nil {
		t.Fatal(err)
	}
	var count atomic.Int64
	failed := make(chan error, len(shards.Shards))
	begin := time.Now()
	for _, sh := range shards.Shards {
		go func() {
			it, err := kin.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String(stream.name), ShardId: sh.ShardId,
				ShardIteratorType: kintypes.ShardIteratorTypeTrimHorizon})
			if err != nil {
				failed <- err
				return
			}
			iter := it.ShardIterator
			for got := 0; got < stream.perShard; {
				out, err := kin.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(10000)})
				if err != nil {
					failed <- err
					return
				}
				got += len(out.Records)
				count.Add(int64(len(out.Records)))
				iter = out.NextShardIterator
			}
		}()
	}
	return measureInProcess(t, "the bare loop", begin, &count, int64(stream.total()), failed)
}

func selfCPU(t *testing.T) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// benchLatency runs kcltool at the tip of a fresh 2-shard stream while 500
// records are put, 50 a second, each carrying its put time; the handler
// notes when it got each batch. It returns the p50 and p99 of the
// differences.
func benchLatency(t *testing.T, bin string, kin *kinesis.Client, idle time.Duration) (p50, p99 time.Duration, n int) {
	t.Helper()
	stream := emulator.Name(t, "lat")
	emulator.CreateStream(t, kin, stream, 2)
	out := filepath.Join(t.TempDir(), "latency.txt")
	cmd := exec.Command(bin, "run", "--app", stream, "--stream", stream, "--create-table", "--kcl-version", "2", "--initial-position", "TRIM_HORIZON",
		"--idle-between-reads", idle.String(), "--log-format", "json", "--format", "raw",
		"--exec", `now=$(date +%s%N); sed "s/^/$now /" >> "$OUT"`)
	cmd.Env = append(append(os.Environ(), emulator.Env(t)...), "OUT="+out)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	ddb := emulator.DynamoDB(t)
	eventuallyE2E(t, 30*time.Second, "the worker to hold both leases", func() bool {
		res, err := leasecore.ScanTable(context.Background(), ddb, stream, leasecore.ScanOptions{})
		if err != nil || len(res.Leases) != 2 {
			return false
		}
		for _, l := range res.Leases {
			if l.LeaseOwner == "" {
				return false
			}
		}
		return true
	})
	time.Sleep(time.Second) // past the first reads
	const records = 500
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for i := range records {
		<-tick.C
		_, err := kin.PutRecord(context.Background(), &kinesis.PutRecordInput{StreamName: aws.String(stream),
			PartitionKey: aws.String(strconv.Itoa(rand.N(1000) + i)), Data: []byte(strconv.FormatInt(time.Now().UnixNano(), 10))})
		if err != nil {
			t.Fatal(err)
		}
	}
	var lat []time.Duration
	eventuallyE2E(t, 30*time.Second, "every record handled", func() bool {
		lat = lat[:0]
		for _, line := range lines(t, out) {
			var got, put int64
			if _, err := fmt.Sscan(line, &got, &put); err == nil {
				lat = append(lat, time.Duration(got-put))
			}
		}
		return len(lat) >= records
	})
	slices.Sort(lat)
	return lat[len(lat)/2], lat[len(lat)*99/100], len(lat)
}
