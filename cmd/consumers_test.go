package cmd

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// efoStack is a stream with a lease table whose name is the application's,
// and so its consumer's: the KCL names both after the application.
func efoStack(t *testing.T) *scenario {
	st := emulator.NewStack(t, 2, emulator.StackOptions{StreamPrefix: "efo", TablePrefix: "efoapp"})
	s := &scenario{t: t, kin: st.Kinesis, ddb: st.DynamoDB, stream: st.Stream, table: st.Table, last: map[string]string{}, prev: map[string]string{}}
	s.refresh()
	return s
}

// register registers the named consumers on the stream and returns their
// ARNs by name.
func (s *scenario) register(names ...string) map[string]string {
	s.t.Helper()
	sum, err := s.kin.DescribeStreamSummary(context.Background(), &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(s.stream)})
	if err != nil {
		s.t.Fatal(err)
	}
	arns := map[string]string{}
	for _, n := range names {
		out, err := s.kin.RegisterStreamConsumer(context.Background(), &kinesis.RegisterStreamConsumerInput{
			StreamARN: sum.StreamDescriptionSummary.StreamARN, ConsumerName: aws.String(n)})
		if err != nil {
			s.t.Fatalf("register %s: %v", n, err)
		}
		arns[n] = aws.ToString(out.Consumer.ConsumerARN)
	}
	return arns
}

// consumerStatus is the consumer's status, "" once it is gone.
func (s *scenario) consumerStatus(arn string) kintypes.ConsumerStatus {
	s.t.Helper()
	out, err := s.kin.DescribeStreamConsumer(context.Background(), &kinesis.DescribeStreamConsumerInput{ConsumerARN: aws.String(arn)})
	if err != nil {
		if strings.Contains(err.Error(), "ResourceNotFoundException") {
			return ""
		}
		s.t.Fatal(err)
	}
	return out.ConsumerDescription.ConsumerStatus
}

// waitActive waits until every consumer is ACTIVE (kinesis-local takes
// 500 ms), so that outputs are the same on every run.
func (s *scenario) waitActive(arns map[string]string) {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for _, arn := range arns {
		for s.consumerStatus(arn) != kintypes.ConsumerStatusActive {
			if time.Now().After(deadline) {
				s.t.Fatalf("%s not ACTIVE after 20s", arn)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

var (
	efoNames     = regexp.MustCompile(`(efo|efoapp)-Test[^"\s,/:]*`)
	rfc3339Time  = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)
	consumerTS   = regexp.MustCompile(`(/consumer/[^:"\s,]+):\d+`)
	ageColumn    = regexp.MustCompile(`<time>( +)(<1s|\d+s|\d+m\d+s)\b`)
	tableSpacing = regexp.MustCompile(` {3,}`)
)

// normalizeConsumers replaces what differs between runs: names, times,
// ages and the ARNs' creation times. Columns are re-spaced, since their
// widths follow the names.
func normalizeConsumers(out string) string {
	out = efoNames.ReplaceAllString(out, "<$1>")
	out = consumerTS.ReplaceAllString(out, "$1:<epoch>")
	out = rfc3339Time.ReplaceAllString(out, "<time>")
	out = ageColumn.ReplaceAllString(out, "<time>$1<age>")
	return tableSpacing.ReplaceAllString(out, "   ")
}

// TestConsumersLs lists 0, 1 and 3 consumers in every output mode, pinned
// by golden files; JSON and CSV are checked against the documented keys.
func TestConsumersLs(t *testing.T) {
	for _, names := range [][]string{nil, {"orders-audit"}, {"orders-billing", "orders-audit", "orders-search"}} {
		t.Run(fmt.Sprintf("%d", len(names)), func(t *testing.T) {
			s := efoStack(t)
			s.waitActive(s.register(names...))
			var all strings.Builder
			for _, o := range cmdutil.ReadFormats {
				out, errOut, code := s.kcltool("consumers", "ls", "--stream", s.stream, "-o", o)
				if code != 0 {
					t.Fatalf("-o %s: exit %d: %s", o, code, errOut)
				}
				fmt.Fprintf(&all, "## -o %s\n%s", o, out)
				if errOut != "" {
					fmt.Fprintf(&all, "## stderr\n%s", errOut)
				}
				if len(names) > 0 {
					c := &schemaChecker{t: t, reached: map[string]map[string]bool{}}
					switch o {
					case cmdutil.FormatJSON:
						c.document("consumers ls", "consumers ls -o json", out)
						if rows := jsonRows(t, out); len(rows) != len(names) || rows[0]["ConsumerName"] != "orders-audit" {
							t.Errorf("rows %v", rows)
						}
					case cmdutil.FormatCSV:
						checkCSV(t, "consumers ls", "consumers ls -o csv", out)
					}
				}
			}
			if len(names) == 3 { // fitted to 80 and 200 columns (docs/output.md)
				for _, cols := range []int{80, 200} {
					out, errOut, code := kcltoolEnv(t, []string{fmt.Sprintf("COLUMNS=%d", cols)}, "consumers", "ls", "--stream", s.stream)
					if code != 0 {
						t.Fatalf("COLUMNS=%d: exit %d: %s", cols, code, errOut)
					}
					for _, l := range strings.Split(out, "\n") {
						if len([]rune(l)) > cols {
							t.Errorf("COLUMNS=%d: a line of %d: %q", cols, len([]rune(l)), l)
						}
					}
					// The footer names the stream, whose name holds the
					// pid: where it wraps varies, so it is joined again.
					if table, footer, ok := strings.Cut(out, "\n\n"); ok {
						out = table + "\n\n" + strings.ReplaceAll(strings.TrimSuffix(footer, "\n"), "\n", " ") + "\n"
					}
					fmt.Fprintf(&all, "## COLUMNS=%d\n%s", cols, out)
				}
			}
			golden(t, fmt.Sprintf("consumers-ls-%d.txt", len(names)), normalizeConsumers(all.String()))
		})
	}
}

// TestConsumersLsNearLimit: from 16 consumers the listing says how many
// more can register, under the table and, with -o json, on stderr; at 20 it
// says the next registration fails.
func TestConsumersLsNearLimit(t *testing.T) {
	s := efoStack(t)
	// Kinesis (and kinesis-local) let 5 consumers be CREATING at once.
	for i := 0; i < 15; i += 5 {
		var names []string
		for j := i; j < i+5; j++ {
			names = append(names, fmt.Sprintf("app-%02d", j))
		}
		s.waitActive(s.register(names...))
	}
	out, _, _ := s.kcltool("consumers", "ls", "--stream", s.stream)
	if strings.Contains(out, "limit:") {
		t.Errorf("15 consumers are not near the limit:\n%s", out)
	}
	s.waitActive(s.register("app-15"))
	out, _, code := s.kcltool("consumers", "ls", "--stream", s.stream)
	if code != 0 || !strings.Contains(out, "16 consumers on stream") || !strings.Contains(out, "near the limit: 16 of 20 consumers, 4 more can register") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	s.register("app-16", "app-17", "app-18", "app-19")
	out, errOut, code := s.kcltool("consumers", "ls", "--stream", s.stream, "-o", "json")
	if code != 0 || len(jsonRows(t, out)) != 20 || !strings.Contains(errOut, "warning: stream "+s.stream+": at the limit: 20 of 20 consumers; registering another fails with LimitExceededException") {
		t.Errorf("exit %d, stderr:\n%s", code, errOut)
	}
}

// renewing renews the leases of the table every interval until stop is
// called, as running KCL workers do: every lease, or with owners only
// theirs (the others' workers are stopped).
func (s *scenario) renewing(interval time.Duration, owners ...string) (stop func()) {
	s.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		leases := map[string]leasecore.Lease{}
		scan, err := leasecore.ScanTable(ctx, s.ddb, s.table, leasecore.ScanOptions{ConsistentRead: true})
		if err != nil {
			return
		}
		for _, l := range scan.Leases {
			if len(owners) == 0 || slices.Contains(owners, l.LeaseOwner) {
				leases[l.LeaseKey] = l
			}
		}
		for ctx.Err() == nil {
			for k, l := range leases {
				if next, err := leasecore.RenewLease(ctx, s.ddb, s.table, l, l.LeaseOwner); err == nil {
					leases[k] = next
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(interval):
			}
		}
	}()
	return func() { cancel(); wg.Wait() }
}

// TestConsumersDeregister: the dry run changes nothing and warns about
// held leases; --execute refuses (exit 3) while the application renews its
// leases, naming the worker, and deregisters once it has stopped; --force
// deregisters a running application's consumer.
func TestConsumersDeregister(t *testing.T) {
	s := efoStack(t)
	app := s.table // the consumer is named after the application
	arns := s.register(app, "other-app")
	s.waitActive(arns)
	s.lease(shardID(0), "worker-a", leasecore.TRIM_HORIZON)
	s.lease(shardID(1), "worker-a", leasecore.TRIM_HORIZON)
	dereg := func(extra ...string) (string, string, int) {
		return s.kcltool(append([]string{"consumers", "deregister", "--stream", s.stream, "--consumer-name", app}, extra...)...)
	}

	out, errOut, code := dereg("-o", "json")
	rows := jsonRows(t, out)
	if code != 0 || len(rows) != 1 || rows[0]["ConsumerStatus"] != "ACTIVE" || rows[0]["ConsumerARN"] != arns[app] {
		t.Fatalf("dry run: exit %d, rows %v\n%s", code, rows, errOut)
	}
	for _, w := range []string{
		fmt.Sprintf(`lease table %q: 2 leases held by worker-a (as read; a stopped worker's name stays on its leases): if the application is running, --execute refuses`, app),
		fmt.Sprintf(`dry run: would deregister consumer %q of stream %s (%s); nothing changed. Add --execute`, app, s.stream, arns[app]),
	} {
		if !strings.Contains(errOut, w) {
			t.Errorf("dry run: stderr lacks %q:\n%s", w, errOut)
		}
	}

	stop := s.renewing(100 * time.Millisecond)
	_, errOut, code = dereg("--execute", "--sample", "1s")
	if code != 3 || !strings.Contains(errOut, fmt.Sprintf(`consumer %q not deregistered: the application of lease table %q is running: worker-a renewed 2 leases in 1s; stop it first, or add --force`, app, app)) {
		t.Errorf("live application: exit %d, want 3:\n%s", code, errOut)
	}
	if got := s.consumerStatus(arns[app]); got != kintypes.ConsumerStatusActive {
		t.Fatalf("after a refusal the consumer is %q", got)
	}
	stop()

	out, errOut, code = dereg("--execute", "--sample", "500ms")
	if code != 0 || !strings.Contains(out, "DELETING") || !strings.Contains(errOut, fmt.Sprintf("deregistered consumer %q of stream %s: it is DELETING", app, s.stream)) {
		t.Fatalf("stopped application: exit %d\n%s%s", code, out, errOut)
	}
	if got := s.consumerStatus(arns[app]); got == kintypes.ConsumerStatusActive {
		t.Errorf("after --execute the consumer is %q", got)
	}
	if s.consumerStatus(arns["other-app"]) != kintypes.ConsumerStatusActive {
		t.Error("the other consumer was touched")
	}

	// --force goes on while the application runs, and says so.
	arns = s.register(app + "-2")
	s.waitActive(arns)
	stop = s.renewing(100 * time.Millisecond)
	defer stop()
	_, errOut, code = s.kcltool("consumers", "deregister", "--stream", s.stream, "--consumer-name", app+"-2", "--app", app, "--execute", "--force", "--sample", "1s")
	if code != 0 || !strings.Contains(errOut, fmt.Sprintf("--force: the application of lease table %q is running: worker-a renewed 2 leases in 1s; deregistering anyway", app)) {
		t.Errorf("--force: exit %d:\n%s", code, errOut)
	}
	if got := s.consumerStatus(arns[app+"-2"]); got == kintypes.ConsumerStatusActive {
		t.Errorf("after --force the consumer is %q", got)
	}
}

// TestConsumersDeregisterNamesWorkers: the dry run names every worker that
// holds leases as read, stopped or not, and says what deregistering does
// to a running Java KCL worker (SHARD_END on its open shards); --execute
// names those that renewed during the sample, in its refusal and with
// --force, and --force --sample 0 still names the holders.
func TestConsumersDeregisterNamesWorkers(t *testing.T) {
	s := efoStack(t)
	app := s.table
	s.waitActive(s.register(app, app+"-2"))
	// worker-a and worker-b run; worker-c stopped and left its name on its
	// lease.
	s.lease(shardID(0), "worker-a", leasecore.TRIM_HORIZON)
	s.lease(shardID(1), "worker-b", leasecore.TRIM_HORIZON)
	s.lease("shardId-000000000007", "worker-c", leasecore.TRIM_HORIZON)
	const harm = "each running Java KCL 2.x or 3.x worker takes the ResourceNotFoundException of its next SubscribeToShard for the end of the shard, with no children, and checkpoints SHARD_END on every open shard it reads; no worker reads those shards from their checkpoints again, restarted or not"
	dereg := func(name string, extra ...string) (string, int) {
		_, errOut, code := s.kcltool(append([]string{"consumers", "deregister", "--stream", s.stream, "--consumer-name", name, "--app", app}, extra...)...)
		return errOut, code
	}
	want := func(what, errOut string, lines ...string) {
		t.Helper()
		for _, l := range lines {
			if !strings.Contains(errOut, l) {
				t.Errorf("%s: stderr lacks %q:\n%s", what, l, errOut)
			}
		}
	}

	errOut, code := dereg(app)
	if code != 0 {
		t.Fatalf("dry run: exit %d:\n%s", code, errOut)
	}
	want("dry run", errOut,
		fmt.Sprintf("warning: lease table %q: 3 leases held by worker-a, worker-b, worker-c (as read; a stopped worker's name stays on its leases)", app),
		"warning: if worker-a, worker-b, worker-c still run, deregistering ends their open shards: "+harm)

	stop := s.renewing(100*time.Millisecond, "worker-a", "worker-b")
	defer stop()
	errOut, code = dereg(app, "--execute", "--sample", "1s")
	if code != 3 {
		t.Errorf("live application: exit %d, want 3:\n%s", code, errOut)
	}
	want("refusal", errOut,
		"the application of lease table "+strconv.Quote(app)+" is running: worker-a, worker-b renewed 2 leases in 1s; stop it first, or add --force (its Java KCL 2.x and 3.x workers would then checkpoint SHARD_END on their open shards and stop reading them")

	errOut, code = dereg(app, "--execute", "--force", "--sample", "1s")
	if code != 0 {
		t.Fatalf("--force: exit %d:\n%s", code, errOut)
	}
	want("--force", errOut,
		"warning: worker-a, worker-b renewed leases during the sample, so they run: deregistering ends their open shards: "+harm)
	if strings.Contains(errOut, "worker-c") {
		t.Errorf("--force names worker-c, which did not renew:\n%s", errOut)
	}

	errOut, code = dereg(app+"-2", "--execute", "--force", "--sample", "0s")
	if code != 0 {
		t.Fatalf("--force --sample 0: exit %d:\n%s", code, errOut)
	}
	want("--force --sample 0", errOut,
		fmt.Sprintf("--force: --sample 0, so not checked whether the application runs: lease table %q has 3 leases held by worker-a, worker-b, worker-c (as read); deregistering anyway", app),
		"warning: if worker-a, worker-b, worker-c still run, deregistering ends their open shards: "+harm)
}

// TestConsumersDeregisterRefusals: a consumer whose application has no
// lease table is refused with exit 3 (nothing says it is unused); unknown
// consumers and streams are errors that name what exists; a CREATING
// consumer cannot be deregistered yet.
func TestConsumersDeregisterRefusals(t *testing.T) {
	s := efoStack(t)
	arns := s.register("no-table-app", "b-app")
	s.waitActive(arns)

	_, errOut, code := s.kcltool("consumers", "deregister", "--stream", s.stream, "--consumer-name", "no-table-app")
	if code != 0 || !strings.Contains(errOut, `warning: no lease table "no-table-app": nothing says whether an application uses consumer "no-table-app"`) {
		t.Errorf("dry run without a table: exit %d:\n%s", code, errOut)
	}
	_, errOut, code = s.kcltool("consumers", "deregister", "--stream", s.stream, "--consumer-name", "no-table-app", "--execute", "--sample", "100ms")
	if code != 3 || !strings.Contains(errOut, `consumer "no-table-app" not deregistered: no lease table "no-table-app", so nothing says whether an application still reads with consumer "no-table-app"; name the application's table with --app or --table, or add --force if it is retired`) {
		t.Errorf("no table: exit %d, want 3:\n%s", code, errOut)
	}
	// Its real application's table, still and empty: deregistered.
	_, errOut, code = s.kcltool("consumers", "deregister", "--stream", s.stream, "--consumer-name", "no-table-app", "--table", s.table, "--execute", "--sample", "100ms")
	if code != 0 {
		t.Errorf("--table: exit %d:\n%s", code, errOut)
	}

	_, errOut, code = s.kcltool("consumers", "deregister", "--stream", s.stream, "--consumer-name", "nope")
	if code != 1 || !strings.Contains(errOut, fmt.Sprintf(`error: stream %q has no consumer "nope"; its consumers: b-app`, s.stream)) ||
		!strings.Contains(errOut, "hint: list them with: kcltool consumers ls --stream "+s.stream) {
		t.Errorf("unknown consumer: exit %d:\n%s", code, errOut)
	}
	missing := s.stream + "-missing"
	for _, args := range [][]string{{"consumers", "ls", "--stream", missing}, {"consumers", "deregister", "--stream", missing, "--consumer-name", "x"}} {
		if _, errOut, code := s.kcltool(args...); code != 1 || !strings.Contains(errOut, fmt.Sprintf(`stream %q not found in us-east-1 (check --stream and --region)`, missing)) {
			t.Errorf("%v: exit %d:\n%s", args, code, errOut)
		}
	}

	// kinesis-local keeps a new consumer CREATING for 500 ms: a command
	// started at once usually sees it so. When this machine was too slow
	// for that, the consumer is ACTIVE and deregistered; either is checked.
	arns = s.register("fresh")
	out, errOut, code := s.kcltool("consumers", "deregister", "--stream", s.stream, "--consumer-name", "fresh", "--execute", "--force", "--sample", "0s", "-o", "csv")
	switch {
	case code == 1:
		if !strings.Contains(errOut, `consumer "fresh" is CREATING: Kinesis deregisters only ACTIVE consumers`) {
			t.Errorf("CREATING: %s", errOut)
		}
	case code == 0:
		t.Logf("the consumer was ACTIVE before kcltool listed it:\n%s", out)
	default:
		t.Errorf("fresh consumer: exit %d:\n%s", code, errOut)
	}
}

// TestCompleteConsumerNames: --consumer-name offers the consumers of the
// --stream on the line (or in KCLTOOL_STREAM), with their status; without
// a stream, nothing.
func TestCompleteConsumerNames(t *testing.T) {
	s := efoStack(t)
	s.waitActive(s.register("billing", "audit", "search"))
	env := localEnv(t)
	c := runComplete(t, env, "consumers", "deregister", "--stream", s.stream, "--consumer-name", "")
	wantValues(t, c, "audit", "billing", "search")
	if !slices.Contains(c.lines, "audit\tACTIVE") {
		t.Errorf("no status in %q", c.lines)
	}
	wantValues(t, runComplete(t, localEnv(t, "KCLTOOL_STREAM="+s.stream), "consumers", "deregister", "--consumer-name", "b"), "billing")
	wantValues(t, runComplete(t, env, "consumers", "deregister", "--consumer-name", ""))
}
