package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/inspect"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
)

// TestBenchScaleLeasesLs is `make bench`'s lease listing at scale: the
// kcltool binary's `leases ls` on a 100,000-lease table in dynalite against
// a bare paginated SDK Scan of the same table, alternately, and the peak
// resident memory of the binary (rusage) in each output format.
func TestBenchScaleLeasesLs(t *testing.T) {
	if os.Getenv("KCLTOOL_BENCH") == "" {
		t.Skip("benchmark: run with KCLTOOL_BENCH=1 (make bench)")
	}
	const leases, rounds = 100000, 3
	bin := kcltoolBinary(t)
	c := emulator.DynamoDB(t)
	table := emulator.Name(t, "scale")
	emulator.CreateLeaseTable(t, c, table)
	t.Cleanup(func() {
		_, _ = c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	start := time.Now()
	fillLeasesParallel(t, c, table, leases, 4)
	fmt.Printf("bench leases-ls-scale: filled %d leases into dynalite in %s\n", leases, time.Since(start).Round(time.Millisecond))

	ls := func(format string) (time.Duration, float64) {
		return runMeasured(t, bin, nil, "leases", "ls", "--app", table, "-o", format)
	}
	scan := func() {
		p := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String(table)})
		n := 0
		for p.HasMorePages() {
			out, err := p.NextPage(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			n += len(out.Items)
		}
		if n != leases {
			t.Fatalf("scan saw %d items", n)
		}
	}
	scan() // dynalite's first full read is slower than the next
	var lsT, scanT []time.Duration
	rss := map[string]float64{}
	for range rounds {
		d, m := ls("json")
		lsT, rss["json"] = append(lsT, d), max(rss["json"], m)
		scanT = append(scanT, timed(scan))
	}
	for _, f := range []string{"csv", "table"} {
		_, rss[f] = ls(f)
	}
	// The total of each side's rounds, so that one slow moment of a
	// loaded machine weighs on both sides alike.
	var lsSum, scanSum time.Duration
	for i := range rounds {
		lsSum, scanSum = lsSum+lsT[i], scanSum+scanT[i]
	}
	fmt.Printf("bench leases-ls-scale: %d leases, %d rounds: kcltool leases ls -o json (the binary) %v; bare SDK Scan %v; ratio %.2fx (goal <= 1.20x)\n",
		leases, rounds, roundAll(lsT), roundAll(scanT), float64(lsSum)/float64(scanSum))
	fmt.Printf("bench leases-ls-scale: %d leases: peak RSS of the binary: -o json %.0f MB, -o csv %.0f MB, -o table %.0f MB (goal < 200 MB)\n",
		leases, rss["json"]/(1<<20), rss["csv"]/(1<<20), rss["table"]/(1<<20))
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}

// runMeasured runs kcltool against the local servers (env overrides) with stdout to
// /dev/null, and returns its wall time and peak resident memory in bytes.
func runMeasured(t *testing.T, bin string, env []string, args ...string) (time.Duration, float64) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), emulator.Env(t)...), env...) // the last of a name wins
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	errOut := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = devNull, errOut
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcltool %v: %v\n%s", args, err, errOut.String())
	}
	d := time.Since(start)
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return d, float64(ru.Maxrss) * 1024 // kB on Linux
}

// fillLeasesParallel is fillLeases split over a few writers.
func fillLeasesParallel(t *testing.T, c *dynamodb.Client, table string, n, writers int) {
	t.Helper()
	var wg sync.WaitGroup
	per := (n + writers - 1) / writers
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fillLeaseRange(t, c, table, w*per, min(n, (w+1)*per))
		}()
	}
	wg.Wait()
}

// fillLeaseRange writes leases from..to-1, shaped as fillLeases writes
// them, with BatchWriteItem; it may run on any goroutine.
func fillLeaseRange(t *testing.T, c *dynamodb.Client, table string, from, to int) {
	var batch []types.WriteRequest
	flush := func() bool {
		for len(batch) > 0 {
			out, err := c.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{
				RequestItems: map[string][]types.WriteRequest{table: batch},
			})
			if err != nil {
				t.Error(err)
				return false
			}
			batch = out.UnprocessedItems[table]
		}
		return true
	}
	for i := from; i < to; i++ {
		l := leasecore.Lease{
			LeaseKey:        fmt.Sprintf("shardId-%012d", i),
			LeaseOwner:      fmt.Sprintf("worker-%d", i%7),
			LeaseCounter:    int64(1000 + i),
			Checkpoint:      leasecore.SequenceNumber{SequenceNumber: "49590338271490256608559692538361571095921575989136" + strings.Repeat("7", 6)},
			StartingHashKey: "0", EndingHashKey: "340282366920938463463374607431768211455",
		}
		batch = append(batch, types.WriteRequest{PutRequest: &types.PutRequest{Item: leasecore.EncodeLease(l)}})
		if len(batch) == 25 && !flush() {
			return
		}
	}
	flush()
}

// TestBenchScaleCheckpointDiff is `make bench`'s lag figure at kinesis-local's
// shard limit: `checkpoint diff` on a stream of up to 2,000 shards (what the
// server has left after the other benchmarks' streams) with a lease each, at
// no network delay and at a 20 ms round trip, with the concurrency chosen
// from the shard count. A recording proxy counts the calls: each shard must
// be read once per run.
func TestBenchScaleCheckpointDiff(t *testing.T) {
	if os.Getenv("KCLTOOL_BENCH") == "" {
		t.Skip("benchmark: run with KCLTOOL_BENCH=1 (make bench)")
	}
	kin, ddb := emulator.Kinesis(t), emulator.DynamoDB(t)
	shards := min(2000, freeShards(t, kin))
	stream, table := emulator.Name(t, "lagscale"), emulator.Name(t, "lagscale")
	start := time.Now()
	// kinesis-local creates at most 1,000 shards at once: more come from
	// doubling them, which leaves the first 1,000 closed. Those have no
	// lease and count as drained; they are never read.
	emulator.CreateStream(t, kin, stream, int32(min(shards, 1000)))
	t.Cleanup(func() {
		_, _ = kin.DeleteStream(context.Background(), &kinesis.DeleteStreamInput{StreamName: aws.String(stream)})
	})
	if shards > 1000 {
		if _, err := kin.UpdateShardCount(context.Background(), &kinesis.UpdateShardCountInput{StreamName: aws.String(stream),
			TargetShardCount: aws.Int32(int32(shards)), ScalingType: kintypes.ScalingTypeUniformScaling}); err != nil {
			t.Fatal(err)
		}
		emulator.WaitStreamActive(t, kin, stream)
	}
	emulator.CreateLeaseTable(t, ddb, table)
	t.Cleanup(func() {
		_, _ = ddb.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	seqs := putOnePerShard(t, kin, stream, shards)
	var leases []leasecore.Lease
	for id, seq := range seqs {
		leases = append(leases, leasecore.Lease{LeaseKey: id, LeaseOwner: "worker-a", LeaseCounter: 1,
			Checkpoint: leasecore.SequenceNumber{SequenceNumber: seq}})
	}
	writeLeases(t, ddb, table, leases)
	fmt.Printf("bench checkpoint-diff-scale: %d shards and leases set up in %s\n", shards, time.Since(start).Round(time.Millisecond))

	// kcltool -> recorder (counts) -> delay proxy -> kinesis-local.
	delay := emulator.NewFaultProxy(t, emulator.KinesisEndpoint(t), emulator.Throttle, 0, "", 1)
	rec, err := emulator.NewRecorder(delay.URL, emulator.NewCallLog(t.TempDir(), nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rec.Close)
	ddbDelay := emulator.NewFaultProxy(t, emulator.DynamoDBEndpoint(t), emulator.Throttle, 0, "", 1)
	base, _, _ := testFactory(t, false, map[string]string{"AWS_ENDPOINT_URL_KINESIS": rec.URL, "AWS_ENDPOINT_URL_DYNAMODB": ddbDelay.URL})
	runs := 0
	diff := func(args ...string) time.Duration {
		f := cmdutil.NewFactory(&cmdutil.IOStreams{Out: io.Discard, ErrOut: io.Discard}, base.Getenv)
		d := timed(func() {
			if code := Run(context.Background(), f, append([]string{"checkpoint", "diff", "--app", table, "--stream", stream, "-o", "json"}, args...)); code != 0 {
				t.Fatalf("checkpoint diff exit %d", code)
			}
		})
		runs++
		// Every run reads every shard once: one iterator naming it, one
		// GetRecords each.
		iters := rec.ShardCounts("GetShardIterator")
		for id := range seqs {
			if iters[id] != int64(runs) {
				t.Fatalf("after %d runs shard %s had %d GetShardIterator calls: a shard was read twice or not at all", runs, id, iters[id])
			}
		}
		if n := rec.Count("GetRecords"); n != int64(runs*shards) {
			t.Fatalf("after %d runs, %d GetRecords calls for %d shards", runs, n, shards)
		}
		return d
	}
	for _, rtt := range []time.Duration{0, 20 * time.Millisecond} {
		delay.SetDelay(rtt)
		ddbDelay.SetDelay(rtt)
		d := diff()
		fmt.Printf("bench checkpoint-diff-scale: %d shards, round trip %s: kcltool checkpoint diff %s (%d probes at once, chosen from the shard count); each shard read once\n",
			shards, rtt, d.Round(time.Millisecond), inspect.ProbeConcurrency(shards))
	}
	fmt.Printf("bench checkpoint-diff-scale: %d runs made %d GetShardIterator and %d GetRecords calls for %d shards; at most %d Kinesis calls in flight\n",
		runs, rec.Count("GetShardIterator"), rec.Count("GetRecords"), shards, rec.MaxInFlight())
}

// freeShards is how many shards kinesis-local still allows (SHARD_LIMIT
// 2000, internal/testenv/emulator) next to the open shards of its streams.
func freeShards(t *testing.T, kin *kinesis.Client) int {
	t.Helper()
	used := 0
	p := kinesis.NewListStreamsPaginator(kin, &kinesis.ListStreamsInput{})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range out.StreamNames {
			s, err := kin.DescribeStreamSummary(context.Background(), &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(name)})
			if err != nil {
				continue // deleted meanwhile
			}
			used += int(aws.ToInt32(s.StreamDescriptionSummary.OpenShardCount))
		}
	}
	return 2000 - used
}

// putOnePerShard puts one record into each of the stream's n open shards,
// at its starting hash key, in PutRecords calls of 500 (the most one call
// takes), and returns each shard's sequence number.
func putOnePerShard(t *testing.T, kin *kinesis.Client, stream string, n int) map[string]string {
	t.Helper()
	listed, err := reshard.ListShards(context.Background(), kin, reshard.Stream{Name: stream}, reshard.ListOptions{})
	// The open shards are those no other shard names as its parent.
	parents := map[string]bool{}
	for _, sh := range listed {
		parents[aws.ToString(sh.ParentShardId)] = true
		parents[aws.ToString(sh.AdjacentParentShardId)] = true
	}
	var all []kintypes.Shard
	for _, sh := range listed {
		if !parents[*sh.ShardId] {
			all = append(all, sh)
		}
	}
	if err != nil || len(all) != n {
		t.Fatalf("list shards: %v (%d open)", err, len(all))
	}
	seqs := map[string]string{}
	for from := 0; from < len(all); from += 500 {
		var entries []kintypes.PutRecordsRequestEntry
		for _, sh := range all[from:min(from+500, len(all))] {
			entries = append(entries, kintypes.PutRecordsRequestEntry{PartitionKey: aws.String("k"),
				ExplicitHashKey: sh.HashKeyRange.StartingHashKey, Data: []byte("x")})
		}
		res, err := kin.PutRecords(context.Background(), &kinesis.PutRecordsInput{StreamName: aws.String(stream), Records: entries})
		if err != nil || aws.ToInt32(res.FailedRecordCount) != 0 {
			t.Fatalf("put records: %v", err)
		}
		for _, r := range res.Records {
			seqs[*r.ShardId] = *r.SequenceNumber
		}
	}
	return seqs
}

// writeLeases writes leases with BatchWriteItem.
func writeLeases(t *testing.T, c *dynamodb.Client, table string, leases []leasecore.Lease) {
	t.Helper()
	for from := 0; from < len(leases); from += 25 {
		var batch []types.WriteRequest
		for _, l := range leases[from:min(from+25, len(leases))] {
			batch = append(batch, types.WriteRequest{PutRequest: &types.PutRequest{Item: leasecore.EncodeLease(l)}})
		}
		for len(batch) > 0 {
			out, err := c.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{
				RequestItems: map[string][]types.WriteRequest{table: batch},
			})
			if err != nil {
				t.Fatal(err)
			}
			batch = out.UnprocessedItems[table]
		}
	}
}

// TestBenchScaleDoctor is `make bench`'s doctor figure at scale: the binary's
// `doctor` on a 10,000-lease table (no stream, no CloudWatch; a 10 s window
// at a 5 s failover time: three reads of the table), with its time, its
// DynamoDB calls and the capacity units they consumed, as dynalite counts
// them when asked (capacityProxy).
func TestBenchScaleDoctor(t *testing.T) {
	if os.Getenv("KCLTOOL_BENCH") == "" {
		t.Skip("benchmark: run with KCLTOOL_BENCH=1 (make bench)")
	}
	const leases = 10000
	bin := kcltoolBinary(t)
	c := emulator.DynamoDB(t)
	table := emulator.Name(t, "docscale")
	emulator.CreateLeaseTable(t, c, table)
	t.Cleanup(func() {
		_, _ = c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	fillLeasesParallel(t, c, table, leases, 4)
	proxy := newCapacityProxy(t, emulator.DynamoDBEndpoint(t))
	d, rss := runMeasured(t, bin, []string{"AWS_ENDPOINT_URL_DYNAMODB=" + proxy.URL},
		"doctor", "--app", table, "--no-cloudwatch", "--window", "10s", "--failover-time", "5s", "--fail-on", "never", "-o", "json")
	calls, units := proxy.totals()
	var ops []string
	total := 0
	for op, n := range calls {
		ops = append(ops, fmt.Sprintf("%s %d", op, n))
		total += n
	}
	slices.Sort(ops)
	fmt.Printf("bench doctor-scale: %d leases, --window 10s --failover-time 5s: %s; %d DynamoDB calls (%s); %.1f read units, %.1f write units consumed; peak RSS %.0f MB\n",
		leases, d.Round(time.Millisecond), total, strings.Join(ops, ", "), units.read, units.write, rss/(1<<20))
}

// capacityProxy sits between kcltool and dynalite: it asks dynalite for
// ConsumedCapacity (TOTAL) on every call that takes it, adds up the units
// answered, counts the calls, and hands kcltool the answer it asked for:
// without ConsumedCapacity unless it asked itself (with the CRC32 header
// the SDK checks recomputed).
type capacityProxy struct {
	URL   string
	mu    sync.Mutex
	calls map[string]int
	units capacityUnits
}

type capacityUnits struct{ read, write float64 }

// capacityOps are the operations that take ReturnConsumedCapacity, and
// whether they read.
var capacityOps = map[string]bool{"Scan": true, "Query": true, "GetItem": true, "BatchGetItem": true,
	"PutItem": false, "UpdateItem": false, "DeleteItem": false, "BatchWriteItem": false}

type askedKey struct{}

func newCapacityProxy(t *testing.T, target string) *capacityProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &capacityProxy{calls: map[string]int{}}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = pr.In.Host
			_, op, _ := strings.Cut(pr.In.Header.Get("X-Amz-Target"), ".")
			p.mu.Lock()
			p.calls[op]++
			p.mu.Unlock()
			if _, ok := capacityOps[op]; !ok {
				return
			}
			body, _ := io.ReadAll(pr.In.Body)
			var m map[string]json.RawMessage
			if json.Unmarshal(body, &m) != nil {
				pr.Out.Body = io.NopCloser(bytes.NewReader(body))
				return
			}
			asked := m["ReturnConsumedCapacity"] != nil && string(m["ReturnConsumedCapacity"]) != `"NONE"`
			if !asked {
				m["ReturnConsumedCapacity"] = json.RawMessage(`"TOTAL"`)
				body, _ = json.Marshal(m)
			}
			pr.Out.Body, pr.Out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
			pr.Out.Header.Del("Content-Length")
			pr.Out = pr.Out.WithContext(context.WithValue(pr.Out.Context(), askedKey{}, []any{op, asked}))
		},
		ModifyResponse: func(resp *http.Response) error {
			v, ok := resp.Request.Context().Value(askedKey{}).([]any)
			if !ok {
				return nil
			}
			op, asked := v[0].(string), v[1].(bool)
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				return err
			}
			var m map[string]json.RawMessage
			if resp.StatusCode == http.StatusOK && json.Unmarshal(body, &m) == nil {
				p.count(op, m["ConsumedCapacity"])
				if !asked {
					delete(m, "ConsumedCapacity")
					body, _ = json.Marshal(m)
				}
			}
			resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
			resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
			resp.Header.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
			return nil
		},
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	p.URL = "http://" + l.Addr().String()
	return p
}

// count adds one answer's ConsumedCapacity: an object (Scan, GetItem, ...)
// or a list of them (the batch calls).
func (p *capacityProxy) count(op string, raw json.RawMessage) {
	type cc struct{ CapacityUnits float64 }
	var list []cc
	var one cc
	if json.Unmarshal(raw, &one) == nil {
		list = []cc{one}
	} else {
		_ = json.Unmarshal(raw, &list)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range list {
		if capacityOps[op] {
			p.units.read += c.CapacityUnits
		} else {
			p.units.write += c.CapacityUnits
		}
	}
}

func (p *capacityProxy) totals() (map[string]int, capacityUnits) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.calls), p.units
}
