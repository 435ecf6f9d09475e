// Command demo is `make demo`: against the local servers it runs the main
// job end to end. It creates a 4-shard stream, produces orders in the
// background, runs two `kcltool run` workers with the sample handler
// (examples/handler.sh), splits a shard, stops one worker so that the other
// takes over, shows the operator views, and stops the workers cleanly.
// By default the workers run a KCL 2.x application (--kcl-version 2): they
// take and steal their leases themselves. With -kcl-version 3 (make
// demo-kcl3) they run a KCL 3.x application, run's default for a new
// table: one of them is elected leader, assigns the leases and balances
// them by graceful handoff, and the stopped worker's leases are assigned
// to the other at the leader's next run.
// With -keep (make demo KEEP=1) it ends by saying how to explore what it
// left in the servers, which the Makefile then leaves running.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/internal/awserr"
)

const app = "demo-orders"

// The producer's pace: a few thousand records in all, kept small per shard
// because the local Kinesis slows down as shards fill. Each round is one
// PutRecords call with one order per customer: PutRecords does not promise
// order within a call, so a customer's orders are ordered by the calls.
const (
	rounds        = 60
	customers     = 40
	perRound      = customers
	roundInterval = 200 * time.Millisecond
)

func main() {
	bin := flag.String("kcltool", "bin/kcltool", "the kcltool binary")
	keep := flag.Bool("keep", false, "the servers stay up afterwards: say how to explore them")
	version := flag.Int("kcl-version", 2, "the application's KCL version: 2 (workers take leases) or 3 (a leader assigns them)")
	flag.Parse()
	if *version != 2 && *version != 3 {
		fmt.Fprintln(os.Stderr, "demo: -kcl-version is 2 or 3")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := run(ctx, *bin, *version); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
	if *keep {
		hint, err := keptHint(*bin, os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"), os.Getenv("AWS_ENDPOINT_URL_KINESIS"), os.Getenv("AWS_ENDPOINT_URL_S3"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "demo:", err)
			os.Exit(1)
		}
		fmt.Print(hint)
	}
}

// keptHint is printed by make demo KEEP=1. The servers keep their data in
// memory only, so this is the one way to explore a table and stream with
// history (a split, released leases, checkpoints) by hand. Its lines work
// pasted into a new shell, in any folder: the script and the binary are
// named by absolute path, and the eval line gives localaws.sh the ports
// the demo used (from the endpoints make's eval gave it), which a new
// shell without KCLTOOL_LOCAL_*_PORT would not know.
func keptHint(bin, ddbEndpoint, kinEndpoint, s3Endpoint string) (string, error) {
	ddbPort, err := endpointPort(ddbEndpoint, "18000")
	if err != nil {
		return "", err
	}
	kinPort, err := endpointPort(kinEndpoint, "18001")
	if err != nil {
		return "", err
	}
	s3Port, err := endpointPort(s3Endpoint, "18003")
	if err != nil {
		return "", err
	}
	script, err := filepath.Abs(filepath.Join("scripts", "localaws.sh"))
	if err != nil {
		return "", err
	}
	if bin, err = filepath.Abs(bin); err != nil {
		return "", err
	}
	kcltool := shellQuote(bin)
	return `
demo done. The local servers are still up, holding the demo's stream and lease table (` + app + `).
Point kcltool at them from any shell:

    eval "$(KCLTOOL_LOCAL_DYNAMODB_PORT=` + ddbPort + ` KCLTOOL_LOCAL_KINESIS_PORT=` + kinPort + ` KCLTOOL_LOCAL_S3_PORT=` + s3Port + ` ` + shellQuote(script) + ` env)"
    ` + kcltool + ` leases ls --app ` + app + `
    ` + kcltool + ` lag --app ` + app + ` --stream ` + app + `
    ` + kcltool + ` lineage --stream ` + app + ` --app ` + app + `

'make down' stops them (their data goes with them).
`, nil
}

// endpointPort is the port of a local server's endpoint URL, or def when
// the demo was run without one (not through make).
func endpointPort(endpoint, def string) (string, error) {
	if endpoint == "" {
		return def, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Port() == "" {
		return "", fmt.Errorf("endpoint %q names no port", endpoint)
	}
	return u.Port(), nil
}

// shellQuote quotes a path for sh only when it needs it.
func shellQuote(s string) string {
	if strings.ContainsFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == '+' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return s
}

func say(format string, args ...any) { fmt.Printf("\n==> "+format+"\n", args...) }

// timeout bounds the whole demo: about 75 s on an idle two-core machine,
// more than twice that on a loaded one.
const timeout = 5 * time.Minute

func run(ctx context.Context, bin string, version int) error {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	handler, err := filepath.Abs(filepath.Join("examples", "handler.sh"))
	if err != nil {
		return err
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return err
	}
	ddb, kin := dynamodb.NewFromConfig(cfg), kinesis.NewFromConfig(cfg)
	if err := reset(ctx, ddb, kin); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "kcltool-demo-")
	if err != nil {
		return err
	}
	say("creating stream %q with 4 shards", app)
	if _, err := kin.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String(app), ShardCount: aws.Int32(4)}); err != nil {
		return err
	}
	if err := waitActive(ctx, kin); err != nil {
		return err
	}

	say("starting two workers: kcltool run --app %s --stream %s --exec examples/handler.sh ...", app, app)
	fmt.Printf("    (the handler appends each order to %s)\n", filepath.Join(work, "orders.log"))
	if version == 3 {
		fmt.Println("    (a KCL 3.x application: one worker is elected leader and assigns the leases)")
	}
	a, err := startWorker(ctx, bin, handler, work, "worker-a", version)
	if err != nil {
		return err
	}
	defer a.stop()
	b, err := startWorker(ctx, bin, handler, work, "worker-b", version)
	if err != nil {
		return err
	}
	defer b.stop()
	if err := waitBalanced(ctx, ddb, version); err != nil {
		return err
	}
	if err := show(ctx, bin, "leases", "ls", "--app", app); err != nil {
		return err
	}

	say("producing %d orders from %d customers in the background (%d every %s)", rounds*perRound, customers, perRound, roundInterval)
	produced := make(chan error, 1)
	go func() { produced <- produce(ctx, kin) }()
	time.Sleep(3 * time.Second)

	say("splitting shardId-000000000001 in two while orders keep coming")
	if err := split(ctx, kin, "shardId-000000000001"); err != nil {
		return err
	}
	time.Sleep(2 * time.Second)

	if version == 3 {
		say("stopping worker-a (SIGTERM): it finishes its batches, checkpoints, deletes its metrics item and evicts its leases; the leader gives them to worker-b at its next run")
	} else {
		say("stopping worker-a (SIGTERM): it finishes its batches, checkpoints, releases its leases; worker-b takes them over at once")
	}
	if err := a.stop(); err != nil {
		return err
	}
	time.Sleep(2 * time.Second)
	if err := show(ctx, bin, "leases", "ls", "--app", app); err != nil {
		return err
	}

	if err := <-produced; err != nil {
		return err
	}
	say("all %d orders produced; waiting for worker-b to handle them", rounds*perRound)
	handled, err := waitHandled(ctx, filepath.Join(work, "orders.log"), rounds*perRound)
	if err != nil {
		return err
	}
	summary, err := orderCheck(filepath.Join(work, "orders.log"), rounds*perRound)
	if err != nil {
		return err
	}
	fmt.Printf("    %d orders in orders.log; %s\n", handled, summary)

	if err := show(ctx, bin, "leases", "ls", "--app", app); err != nil {
		return err
	}
	if err := show(ctx, bin, "lag", "--app", app, "--stream", app); err != nil {
		return err
	}
	if err := show(ctx, bin, "lineage", "--stream", app, "--app", app); err != nil {
		return err
	}

	say("stopping worker-b (SIGTERM)")
	if err := b.stop(); err != nil {
		return err
	}
	fmt.Printf("    both workers exited 0; every lease is released:\n")
	return show(ctx, bin, "leases", "ls", "--app", app)
}

// reset removes what an earlier demo left, so every run starts the same.
func reset(ctx context.Context, ddb *dynamodb.Client, kin *kinesis.Client) error {
	if _, err := ddb.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(app)}); err != nil && !awserr.NotFound(err) {
		return err
	}
	_ = dynamodb.NewTableNotExistsWaiter(ddb).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(app)}, time.Minute)
	// Only a stream that exists is deleted: kinesis-local 0.6.2 answers
	// DeleteStream of a missing stream with ResourceNotFoundException, yet
	// drops a CreateStream of that name sent within DELETE_STREAM_DURATION
	// (it answers 200, and the stream never appears).
	_, err := kin.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(app)})
	switch {
	case awserr.NotFound(err):
		return nil
	case err != nil:
		return err
	}
	if _, err := kin.DeleteStream(ctx, &kinesis.DeleteStreamInput{StreamName: aws.String(app)}); err != nil {
		return err
	}
	return kinesis.NewStreamNotExistsWaiter(kin).Wait(ctx, &kinesis.DescribeStreamInput{StreamName: aws.String(app)}, time.Minute)
}

func waitActive(ctx context.Context, kin *kinesis.Client) error {
	for {
		out, err := kin.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(app)})
		if err == nil && out.StreamDescriptionSummary.StreamStatus == kintypes.StreamStatusActive {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// produce puts the rounds of orders; a failed entry is retried before the
// next round, so each customer's orders stay in order.
func produce(ctx context.Context, kin *kinesis.Client) error {
	order := 0
	for range rounds {
		var entries []kintypes.PutRecordsRequestEntry
		for c := range customers {
			order++
			customer := fmt.Sprintf("customer-%03d", c)
			entries = append(entries, kintypes.PutRecordsRequestEntry{
				PartitionKey: aws.String(customer),
				Data:         fmt.Appendf(nil, `{"customer":%q,"order":%d}`, customer, order),
			})
		}
		for len(entries) > 0 {
			out, err := kin.PutRecords(ctx, &kinesis.PutRecordsInput{StreamName: aws.String(app), Records: entries})
			if err != nil {
				return err
			}
			var failed []kintypes.PutRecordsRequestEntry
			for i, res := range out.Records {
				if res.ErrorCode != nil {
					failed = append(failed, entries[i])
				}
			}
			entries = failed
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(roundInterval):
		}
	}
	return nil
}

func split(ctx context.Context, kin *kinesis.Client, shard string) error {
	out, err := kin.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String(app)})
	if err != nil {
		return err
	}
	for _, s := range out.Shards {
		if aws.ToString(s.ShardId) != shard {
			continue
		}
		lo, _ := new(big.Int).SetString(aws.ToString(s.HashKeyRange.StartingHashKey), 10)
		hi, _ := new(big.Int).SetString(aws.ToString(s.HashKeyRange.EndingHashKey), 10)
		mid := new(big.Int).Rsh(new(big.Int).Add(lo, hi), 1)
		if _, err := kin.SplitShard(ctx, &kinesis.SplitShardInput{StreamName: aws.String(app),
			ShardToSplit: aws.String(shard), NewStartingHashKey: aws.String(mid.String())}); err != nil {
			return err
		}
		return waitActive(ctx, kin)
	}
	return fmt.Errorf("no shard %s", shard)
}

// worker is a running `kcltool run`, its log condensed onto the terminal.
type worker struct {
	name string
	cmd  *exec.Cmd
	logs sync.WaitGroup
	once sync.Once
	err  error
}

func startWorker(ctx context.Context, bin, handler, dir, id string, version int) (*worker, error) {
	cmd := exec.CommandContext(ctx, bin, "run", "--app", app, "--stream", app, "--worker-id", id,
		"--create-table", "--kcl-version", fmt.Sprint(version), "--initial-position", "TRIM_HORIZON", "--exec", handler,
		// Short timings, so that the demo shows in seconds what takes the
		// KCL's defaults a minute.
		"--failover-time", "3s", "--taker-interval", "1s", "--parent-poll-interval", "1s",
		"--shard-sync-interval", "5s", "--cleanup-interval", "5s", "--log-format", "json")
	cmd.Dir = dir
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	w := &worker{name: id, cmd: cmd}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	w.logs.Add(1)
	go func() {
		defer w.logs.Done()
		w.relay(stderr)
	}()
	return w, nil
}

// relay prints the log lines that tell the story, one short line each.
func (w *worker) relay(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var e map[string]any
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			fmt.Printf("    [%s] %s\n", w.name, sc.Text())
			continue
		}
		msg, _ := e["msg"].(string)
		var detail []string
		for _, k := range []string{"shard", "lease", "checkpoint", "children", "parents", "leases", "from", "reason", "err"} {
			if v, ok := e[k]; ok {
				detail = append(detail, fmt.Sprintf("%s=%v", k, v))
			}
		}
		switch msg {
		case "worker started", "reading shard", "stole lease", "created the child shards' leases", "shard finished: checkpointed SHARD_END",
			"waiting for parent shards to reach SHARD_END", "parent shards finished", "lease lost", "lease released",
			"stopping: shards stop reading, running handlers may finish", "worker stopped: every lease released",
			"deleted the leases of finished parent shards", "handler failed":
			fmt.Printf("    [%s] %s %s\n", w.name, msg, strings.Join(detail, " "))
		}
	}
}

// stop sends SIGTERM once and waits for a clean exit.
func (w *worker) stop() error {
	w.once.Do(func() {
		_ = w.cmd.Process.Signal(syscall.SIGTERM)
		w.logs.Wait()
		if err := w.cmd.Wait(); err != nil {
			w.err = fmt.Errorf("%s: %w", w.name, err)
		}
	})
	return w.err
}

// show runs an operator command and prints it with its output.
func show(ctx context.Context, bin string, args ...string) error {
	fmt.Printf("\n$ kcltool %s\n", strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}

// waitHandled waits until want distinct orders are in the log, and returns
// how many lines it holds. Lines alone are not enough: an order handled
// twice (a lease moved) is two lines, and a wait for want lines once ended
// with 44 orders still unread on a loaded machine. It gives up when no new
// order was handled for 40 s, not 40 s after it began: on a loaded machine
// (the race detector, other tests beside it) the handler, a shell script
// per batch, keeps up more slowly, and the demo failed while still making
// progress (2222 of 2400 after 40 s). ctx bounds the whole wait.
func waitHandled(ctx context.Context, path string, want int) (int, error) {
	const quiet = 40 * time.Second
	last, progress := -1, time.Now()
	for {
		lines := readLines(path)
		n := distinctOrders(lines)
		if n >= want {
			return len(lines), nil
		}
		if n > last {
			last, progress = n, time.Now()
		}
		if time.Since(progress) > quiet {
			return len(lines), fmt.Errorf("only %d of %d orders handled, and none for %s", n, want, quiet)
		}
		select {
		case <-ctx.Done():
			return n, fmt.Errorf("only %d of %d orders handled: %w", n, want, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// distinctOrders counts the different orders among the log's lines (a
// line is the shard's ID, a space, and the order's JSON). A line the
// handler is still writing is not valid JSON yet and is not counted.
func distinctOrders(lines []string) int {
	seen := make(map[string]bool, len(lines))
	for _, line := range lines {
		if _, data, _ := strings.Cut(line, " "); json.Valid([]byte(data)) {
			seen[data] = true
		}
	}
	return len(seen)
}

func readLines(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\n"), "\n")
}

// orderCheck fails unless every one of the want orders reached the handler
// and each customer's orders came in the order they were produced, across
// the split and the takeover. A repeat of an order already handled is a
// duplicate (delivery is at least once), not a break of order.
func orderCheck(path string, want int) (string, error) {
	last := map[string]int{}
	seen := map[string]bool{}
	dups := 0
	for _, line := range readLines(path) {
		_, data, _ := strings.Cut(line, " ")
		var o struct {
			Customer string `json:"customer"`
			Order    int    `json:"order"`
		}
		if json.Unmarshal([]byte(data), &o) != nil {
			return "", fmt.Errorf("orders.log: unreadable line %q", line)
		}
		switch {
		case seen[data]:
			dups++
		case o.Order < last[o.Customer]:
			return "", fmt.Errorf("orders.log: order %d of %s came after order %d", o.Order, o.Customer, last[o.Customer])
		default:
			seen[data] = true
			last[o.Customer] = o.Order
		}
	}
	if len(seen) != want {
		return "", fmt.Errorf("orders.log: %d distinct orders, want %d", len(seen), want)
	}
	return fmt.Sprintf("each of the %d customers' orders arrived in the order produced, across the split and the takeover (%d handled twice)", len(last), dups), nil
}

// waitBalanced waits until each worker holds two of the four leases: under
// KCL 2.x the second worker steals one lease per taker run from the first;
// under 3.x the leader balances at its first run and every third after, by
// graceful handoff.
func waitBalanced(ctx context.Context, ddb *dynamodb.Client, version int) error {
	within := 30 * time.Second
	if version == 3 {
		within = 90 * time.Second
	}
	deadline := time.Now().Add(within)
	for {
		out, err := ddb.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(app), ConsistentRead: aws.Bool(true)})
		if err == nil {
			owners := map[string]int{}
			for _, item := range out.Items {
				if o, ok := item["leaseOwner"].(*ddbtypes.AttributeValueMemberS); ok {
					owners[o.Value]++
				}
			}
			if owners["worker-a"] == 2 && owners["worker-b"] == 2 {
				// A worker notices a stolen lease at its next renewal (a
				// third of the failover time); let that pass before data flows.
				time.Sleep(time.Second)
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the workers did not share the leases within %s", within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
