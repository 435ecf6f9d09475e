package cmd

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/kcl3fleet"
)

// rollingHandler writes each batch as fleetHandler does, notes when (in
// milliseconds, in $OUT.times) so that the test can see how long a shard
// went unread, and then works a fifth of a second more: a handler is then
// nearly always running when a worker gets SIGTERM, with its output
// already written, and a stop that did not let it finish and checkpoint
// would show as records handled twice.
const rollingHandler = `flock "$OUT.lock" sh -c '{ echo "# $KCLTOOL_WORKER_ID $KCLTOOL_SHARD_ID $KCLTOOL_ATTEMPT"; cat; } >> "$OUT"; echo "$KCLTOOL_SHARD_ID $(date +%s%3N)" >> "$OUT.times"'; sleep 0.2`

// A rolling deploy of a kcltool-led KCL 3.x fleet, end to end (issue 26,
// point 5): 6 shards, 3 workers, records arriving all along; each worker in
// turn gets SIGTERM and is replaced by a new process once it has exited.
// A stopping worker finishes and checkpoints its batches, evicts its leases
// and, if it leads, deletes the lock; the leader assigns the leases at
// once. Every record is handled; none twice unless a handler was killed
// at the end of the shutdown grace; and the longest time a shard went
// without a batch while records waited is logged (MEASURED) beside the
// fleet simulation's 64 × 4 figures.
func TestRunKCL3RollingDeploy(t *testing.T) {
	// It waits on processes and timers for most of its minute: beside the
	// other parallel tests it costs the package little.
	t.Parallel()
	s := newE2EStack(t, 6)
	f := kcl3App(t, s, kcl3fleet.NewApp)
	out := filepath.Join(t.TempDir(), "handled.jsonl")
	env := []string{"OUT=" + out}
	args := func(id string) []string {
		return runArgs(s, id, "--worker-metrics-interval", "1s", "--exec", rollingHandler)
	}
	ws := map[string]*worker{}
	var all []*worker
	startAs := func(id string) {
		ws[id] = startWorker(t, id, env, args(id)...)
		all = append(all, ws[id])
	}
	for _, id := range []string{"A", "B", "C"} {
		startAs(id)
	}
	heldBy := func(ids ...string) (total int, each map[string]int) {
		o := fleetOwners(t, f)
		for _, id := range ids {
			total += o[id]
		}
		return total, o
	}
	eventuallyE2E(t, 60*time.Second, "a leader assigning every lease to A, B and C", func() bool {
		n, o := heldBy("A", "B", "C")
		return leaderOwner(t, f) != "" && n == 6 && o["A"] > 0 && o["B"] > 0 && o["C"] > 0
	})

	keys := keyNames(60)
	rounds := 0
	stop := make(chan struct{})
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for {
			select {
			case <-stop:
				return
			case <-time.After(300 * time.Millisecond):
			}
			s.putRound(t, keys, rounds) // t.Fatal here ends only this goroutine, the test fails
			rounds++
		}
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
	}()
	time.Sleep(2 * time.Second)

	deployStart := time.Now()
	live := []string{"A", "B", "C"}
	for i, old := range []string{"A", "B", "C"} {
		ws[old].signal(t, syscall.SIGTERM)
		if code := ws[old].exitCode(t, 30*time.Second); code != 0 {
			t.Fatalf("%s exited %d after SIGTERM, want 0", old, code)
		}
		repl := "N" + strconv.Itoa(i+1)
		live = append(slices.DeleteFunc(live, func(id string) bool { return id == old }), repl)
		startAs(repl)
		eventuallyE2E(t, 60*time.Second, repl+" replacing "+old+" with a share of the leases", func() bool {
			n, o := heldBy(live...)
			return n == 6 && o[repl] > 0
		})
	}
	deployEnd := time.Now()
	close(stop)
	<-produced

	want := len(keys) * rounds
	eventuallyE2E(t, 60*time.Second, "every record handled", func() bool {
		return distinctRecords(readBatchesLocked(t, out)) == want
	})
	for _, id := range live {
		ws[id].signal(t, syscall.SIGTERM)
	}
	for _, id := range live {
		if code := ws[id].exitCode(t, 30*time.Second); code != 0 {
			t.Errorf("%s exited %d after SIGTERM, want 0", id, code)
		}
	}

	batches := readBatches(t, out)
	lost := map[string]map[string]bool{}
	for _, w := range all {
		lost[w.name] = leasesLostIn(w.logs.String())
		if len(lost[w.name]) > 0 {
			t.Errorf("%s lost leases %v: a graceful rolling deploy moves leases by handoff and eviction only", w.name, lost[w.name])
		}
	}
	checkDuplicatesFromMovedLeases(t, batches, lost)
	// A batch in flight at SIGTERM finishes and is checkpointed before the
	// lease is evicted: a record comes twice only from a handler killed when
	// the shutdown grace expired, which the worker logs.
	if dup := countHandlings(batches) - want; dup > 0 {
		cut := false
		for _, w := range all {
			cut = cut || strings.Contains(w.logs.String(), "shutdown grace expired")
		}
		if !cut {
			t.Errorf("%d records handled twice, and no worker's shutdown grace expired: a stopping worker must checkpoint its batches in flight before it gives its leases up", dup)
		}
	}
	longest, shard := longestUnread(t, out+".times", deployStart, deployEnd)
	t.Logf("MEASURED e2e rolling deploy (6 shards x 3 workers, each replaced after SIGTERM): %s, %d records, %d handlings (%d twice); longest gap between a shard's batches during the deploy %s (%s)",
		deployEnd.Sub(deployStart).Round(100*time.Millisecond), want, countHandlings(batches), countHandlings(batches)-want, longest.Round(10*time.Millisecond), shard)
}

// longestUnread is the longest time between two batches of a shard that
// fell in the window, from the handler's $OUT.times lines; records arrive
// every 300 ms on every shard, so a gap is time the shard went unread.
func longestUnread(t *testing.T, path string, from, to time.Time) (time.Duration, string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	last := map[string]time.Time{}
	var longest time.Duration
	var which string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		shard, ms, ok := strings.Cut(sc.Text(), " ")
		n, err := strconv.ParseInt(ms, 10, 64)
		if !ok || err != nil {
			t.Fatalf("times line %q", sc.Text())
		}
		at := time.UnixMilli(n)
		if prev, ok := last[shard]; ok && at.After(from) && prev.Before(to) {
			if d := at.Sub(prev); d > longest {
				longest, which = d, shard
			}
		}
		last[shard] = at
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return longest, which
}
