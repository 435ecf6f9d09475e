package cmd

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// The MultiLang benchmark's stream: fewer shards than the run benchmark's,
// with more records each, so that each child (one per lease, long-lived)
// handles several pages, as a consumer's children do, rather than only its
// first two. kinesis-local fills a shard in time that grows with the square
// of its records (docs/benchmarks.md), which bounds how many fit in the
// benchmark's time.
const (
	mlBenchShards         = 8
	mlBenchRecordsByShard = 5000
)

// TestBenchMultiLang is `make bench`'s figure for the MultiLangDaemon's
// replacement: `kcltool run --properties` with maxRecords = 1000 and a
// minimal MultiLang child in Go (testdata/mlbench, built here), which
// checkpoints every processRecords, next to `run --exec 'cat >/dev/null'`
// at batch size 1000 and vmware-go-kcl-v2 v1.0.0 reading pages of 1,000
// with a no-op processor, on a stream of its own (mlBenchShards ×
// mlBenchRecordsByShard records: five pages per child), three rounds
// each, the best round of each counting. CPU is kcltool's own and its
// handlers' (the MultiLang children's, read from
// kcltool_shard_handler_cpu_seconds_total while they run), from a tenth
// of the records to the end, as in TestBenchRun; a child starts once per
// lease, so the start of the children that started inside that window
// (the CPU each noted when it was ready) is taken out as start-up. The
// goal: kcltool and its children together at most 0.5× the peer's CPU per
// record, keeping pace with the stream. It only runs with KCLTOOL_BENCH=1.
func TestBenchMultiLang(t *testing.T) {
	if os.Getenv("KCLTOOL_BENCH") == "" {
		t.Skip("benchmark: run with KCLTOOL_BENCH=1 (make bench)")
	}
	for _, kv := range emulator.Env(t) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v) // for the in-process peer's SDK config
	}
	bin := kcltoolBinary(t)
	ml := newMLBench(t)
	kin := emulator.Kinesis(t)
	stream := newBenchStream(t, kin, "bench-ml", mlBenchShards, mlBenchRecordsByShard)
	total := stream.total()
	const (
		mlName = "kcltool run --properties (maxRecords = 1000, a MultiLang child per shard)"
		cat    = "kcltool run --batch-size 1000 --exec 'cat >/dev/null'"
		peer   = "vmware-go-kcl-v2 v1.0.0 (in-process no-op, pages of 1,000)"
	)
	var results []benchResult
	var startup []float64 // the children's start-up taken out of each MultiLang round, per 100k records
	for round := range 3 {
		// A child starts once per lease, not per record: the start-up of
		// the children that started inside the window comes out, as every
		// contender's start-up does.
		secs, cpu, late, n := ml.round(t, bin, stream, fmt.Sprintf("%s-ml-%d", stream.name, round), fmt.Sprintf("kcltool run --properties, round %d", round+1))
		cpu.children -= late
		startup = append(startup, late/float64(total)*100000)
		results = append(results, benchResult{mlName, secs, cpu.total(), cpu.children})
		t.Logf("multilang: %.2fs, %.2f CPU-s (children %.2f, after %.3f CPU-s of the start-up of %d of them)", secs, cpu.total(), cpu.children, late, n)
		catApp := fmt.Sprintf("%s-k1000-%d", stream.name, round)
		secs, cpu, _ = benchKcltoolRun(t, bin, stream, catApp, fmt.Sprintf("kcltool run --batch-size 1000, round %d", round+1),
			"--app", catApp, "--stream", stream.name, "--initial-position", "TRIM_HORIZON", "--batch-size", "1000", "--exec", "cat >/dev/null")
		results = append(results, benchResult{cat, secs, cpu.total(), cpu.children})
		t.Logf("exec cat: %.2fs, %.2f CPU-s (handlers %.2f)", secs, cpu.total(), cpu.children)
		s, c := benchPeerPages(t, stream.name, int64(total), round, 1000)
		results = append(results, benchResult{peer, s, c, 0})
		t.Logf("peer: %.2fs, %.2f CPU-s", s, c)
	}
	best := map[string]benchResult{}
	for _, r := range results {
		if b, ok := best[r.name]; !ok || r.cpu < b.cpu {
			best[r.name] = r
		}
	}
	per100k := func(cpu float64) float64 { return cpu / float64(total) * 100000 }
	for _, name := range []string{mlName, cat, peer} {
		r := best[name]
		split := ""
		if name != peer {
			split = fmt.Sprintf(" (kcltool itself %.3f, its handler processes %.3f)", per100k(r.cpu-r.handlers), per100k(r.handlers))
		}
		fmt.Printf("bench multilang-throughput: %s: %d records (%d shards) in %.2fs from start = %.0f records/s; %.3f CPU-seconds per 100k records after start-up%s\n",
			name, total, stream.shards, r.secs, float64(total)/r.secs, per100k(r.cpu), split)
	}
	fmt.Printf("bench multilang-child-startup: taken out as start-up: %.3f, %.3f, %.3f CPU-seconds per 100k records (the children that started after the first tenth of the records)\n",
		startup[0], startup[1], startup[2])
	p := best[peer]
	for _, name := range []string{mlName, cat} {
		r := best[name]
		fmt.Printf("bench multilang-cpu-ratio: %s vs peer: %.2fx CPU per record with the handler processes (goal <= 0.50x), %.2fx for kcltool itself, %.2fx throughput\n",
			name, r.cpu/p.cpu, (r.cpu-r.handlers)/p.cpu, p.secs/r.secs)
	}
}

// childStartup sums, scaled as the window's figures are, the CPU time the
// children that became ready inside the window spent on their start (the
// lines testdata/mlbench notes: when it was ready, the CPU its start took),
// and says how many they were.
func childStartup(t *testing.T, path string, w benchWindow) (float64, int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var at, ns int64
		if _, err := fmt.Sscan(line, &at, &ns); err != nil {
			t.Fatalf("%s: %q: %v", path, line, err)
		}
		if time.Unix(0, at).After(w.from) {
			sum += time.Duration(ns).Seconds()
			n++
		}
	}
	return sum * w.scale, n
}

// TestBenchMultiLangAB is a developer's tool, not part of `make bench`'s
// figures: KCLTOOL_BENCH_ML_AB=A,B (two kcltool binaries, say main's and a
// branch's) reads TestBenchMultiLang's stream with A and B alternately, six
// rounds each, without the other contenders, and prints each round's CPU
// per 100k records, kcltool itself and its children (start-up taken out),
// measured as TestBenchMultiLang measures them. The peer's figure moves with
// the machine's load by more than a change of a tenth, and a comparison
// of binaries in alternate rounds of one run is what shows one.
func TestBenchMultiLangAB(t *testing.T) {
	ab := os.Getenv("KCLTOOL_BENCH_ML_AB")
	bins := strings.Split(ab, ",")
	if os.Getenv("KCLTOOL_BENCH") == "" || len(bins) != 2 {
		t.Skip("developer's benchmark: KCLTOOL_BENCH=1 KCLTOOL_BENCH_ML_AB=/path/to/kcltool-a,/path/to/kcltool-b")
	}
	ml := newMLBench(t)
	stream := newBenchStream(t, emulator.Kinesis(t), "bench-mlab", mlBenchShards, mlBenchRecordsByShard)
	per100k := func(cpu float64) float64 { return cpu / float64(stream.total()) * 100000 }
	for round := range 12 {
		bin := bins[round%2]
		secs, cpu, late, _ := ml.round(t, bin, stream, fmt.Sprintf("%s-%d", stream.name, round), fmt.Sprintf("%s, round %d", bin, round+1))
		fmt.Printf("bench multilang-ab: %s: %.2fs from start; CPU-seconds per 100k records: kcltool itself %.3f, its children %.3f\n",
			bin, secs, per100k(cpu.total()-cpu.children), per100k(cpu.children-late))
	}
}

// mlBench is the MultiLang benchmarks' child (testdata/mlbench, built once)
// and the folder of their properties files.
type mlBench struct {
	dir, child string
}

func newMLBench(t *testing.T) mlBench {
	t.Helper()
	b := mlBench{dir: t.TempDir()}
	b.child = filepath.Join(b.dir, "mlbench")
	if out, err := exec.Command("go", "build", "-o", b.child, "./testdata/mlbench").CombinedOutput(); err != nil {
		t.Fatalf("go build mlbench: %v\n%s", err, out)
	}
	return b
}

// round runs `bin run --properties` for application app on the stream, as
// benchKcltoolRun measures it, and returns its figures with the start-up
// of the children that started inside the CPU window (late, of n
// children), which it does not take out.
func (b mlBench) round(t *testing.T, bin string, stream benchStream, app, label string) (secs float64, cpu cpuTimes, late float64, n int) {
	t.Helper()
	props := filepath.Join(b.dir, app+".properties")
	// As users write it for the MultiLangDaemon; endpoints and region
	// come from the environment.
	file := fmt.Sprintf("executableName = %s\napplicationName = %s\nstreamName = %s\ninitialPositionInStream = TRIM_HORIZON\n"+
		"maxRecords = 1000\nAwsCredentialsProvider = DefaultCredentialsProvider\n", b.child, app, stream.name)
	if err := os.WriteFile(props, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	starts := filepath.Join(b.dir, app+".starts")
	t.Setenv("MLBENCH_STARTS", starts)
	secs, cpu, window := benchKcltoolRun(t, bin, stream, app, label, "--properties", props)
	late, n = childStartup(t, starts, window)
	return secs, cpu, late, n
}
