package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// doctorReport is the part of doctor's JSON the tests read.
type doctorReport struct {
	Reads        int  `json:"reads"`
	WindowMillis int  `json:"windowMillis"`
	Failed       bool `json:"failed"`
	Findings     []struct {
		ID       string `json:"id"`
		Severity string `json:"severity"`
		Summary  string `json:"summary"`
		Evidence struct {
			Lines   []string           `json:"lines"`
			Values  map[string]float64 `json:"values"`
			Shards  []string           `json:"shards"`
			Workers []string           `json:"workers"`
		} `json:"evidence"`
		Cause string `json:"cause"`
		Fix   string `json:"fix"`
	} `json:"findings"`
	Cost struct {
		DynamoDB struct {
			Scans int `json:"scans"`
			Pages int `json:"pages"`
		} `json:"dynamodb"`
		CloudWatch struct {
			GetMetricData int `json:"getMetricData"`
		} `json:"cloudwatch"`
	} `json:"cost"`
}

// runDoctorJSON runs `kcltool doctor ARGS -o json` (the built binary) with the
// local servers' environment plus env, and decodes the report.
func runDoctorJSON(t *testing.T, env []string, args ...string) (doctorReport, string, int) {
	t.Helper()
	out, errOut, code := runBinary(t, env, append(append([]string{"doctor"}, args...), "-o", "json")...)
	var rep doctorReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("doctor exit %d, output is not a report: %v\nstdout:\n%s\nstderr:\n%s", code, err, out, errOut)
	}
	return rep, out, code
}

func runBinary(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(kcltoolBinary(t), args...)
	cmd.Env = recordCalls(t, args, append(append(os.Environ(), emulator.Env(t)...), env...))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), errOut.String(), 0
	case errors.As(err, &ee):
		return out.String(), errOut.String(), ee.ExitCode()
	}
	t.Fatal(err)
	return "", "", -1
}

// finding returns the report's finding with the id, failing without one.
func (r doctorReport) finding(t *testing.T, id string) (sev, summary, cause string, lines []string) {
	t.Helper()
	for _, f := range r.Findings {
		if f.ID == id {
			return f.Severity, f.Summary, f.Cause, f.Evidence.Lines
		}
	}
	t.Fatalf("no %s finding in:\n%s", id, r.summaries())
	return
}

func (r doctorReport) has(id string) bool {
	for _, f := range r.Findings {
		if f.ID == id {
			return true
		}
	}
	return false
}

func (r doctorReport) summaries() string {
	var b strings.Builder
	for _, f := range r.Findings {
		b.WriteString("  " + f.Severity + " " + f.ID + ": " + f.Summary + "\n")
		for _, l := range f.Evidence.Lines {
			b.WriteString("      " + l + "\n")
		}
	}
	return b.String()
}

// expectFinding asserts a finding's id and severity.
func expectFinding(t *testing.T, rep doctorReport, id, severity string) (summary, cause string) {
	t.Helper()
	sev, summary, cause, _ := rep.finding(t, id)
	if sev != severity {
		t.Errorf("%s is %s, want %s: %s\n%s", id, sev, severity, summary, rep.summaries())
	}
	return summary, cause
}

// doctorStack is a stream whose shards' last sequence numbers the test
// tracks, and an application name for kcltool run workers.
type doctorStack struct {
	e2eStack
	last map[string]string
}

func newDoctorStack(t *testing.T, shards int32) *doctorStack {
	return &doctorStack{e2eStack: newE2EStack(t, shards), last: map[string]string{}}
}

// putEach writes n records to every open shard, by explicit hash key.
func (s *doctorStack) putEach(t *testing.T, n int, data string) {
	t.Helper()
	out, err := s.kin.ListShards(context.Background(), &kinesis.ListShardsInput{StreamName: aws.String(s.stream)})
	if err != nil {
		t.Fatal(err)
	}
	for _, sh := range out.Shards {
		if sh.SequenceNumberRange.EndingSequenceNumber != nil {
			continue
		}
		for range n {
			r, err := s.kin.PutRecord(context.Background(), &kinesis.PutRecordInput{StreamName: aws.String(s.stream),
				PartitionKey: aws.String("k"), ExplicitHashKey: sh.HashKeyRange.StartingHashKey, Data: []byte(data)})
			if err != nil {
				t.Fatal(err)
			}
			s.last[aws.ToString(r.ShardId)] = aws.ToString(r.SequenceNumber)
		}
	}
}

// caughtUp: every shard written to has a lease checkpointed at its last record.
func (s *doctorStack) caughtUp(t *testing.T) bool {
	leases := s.leases(t)
	for shard, seq := range s.last {
		if leases[shard].Checkpoint.SequenceNumber != seq {
			return false
		}
	}
	return true
}

// balanced: n workers hold the same number of leases each, all leases owned.
func (s *doctorStack) balanced(t *testing.T, workers, leases int) bool {
	owners := s.owners(t)
	if len(owners) != workers {
		return false
	}
	for _, c := range owners {
		if c != leases/workers {
			return false
		}
	}
	return true
}

// doctorWorkerArgs are `kcltool run` flags with a 1s failover time so that
// doctor windows of a few seconds see several failover times.
func doctorWorkerArgs(s *doctorStack, id string, extra ...string) []string {
	return append([]string{"run", "--app", s.app, "--stream", s.stream, "--worker-id", id, "--create-table", "--kcl-version", "2",
		"--initial-position", "TRIM_HORIZON", "--failover-time", "1s", "--idle-between-reads", "200ms",
		"--shard-sync-interval", "2s", "--parent-poll-interval", "500ms", "--log-format", "json"}, extra...)
}

// holdLeases runs an in-process KCL 2.x worker (the lease protocol only,
// no processing): a live owner that renews and never checkpoints, like a
// Java application whose processor ignores shardEnded.
func holdLeases(t *testing.T, table, worker string, failover time.Duration, want int) {
	t.Helper()
	ddb := emulator.DynamoDB(t)
	c, err := leasecore.NewCoordinator(ddb, table, leasecore.Config{WorkerID: worker, FailoverTime: failover}, nil, leasecore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background(), false) })
	eventuallyE2E(t, 10*time.Second, worker+" to hold its leases", func() bool { return len(c.Held()) == want })
}

var (
	doctorName     = regexp.MustCompile(`(views|app)-Test[^"\s,\\]*`)
	doctorTime     = regexp.MustCompile(`"\d{4}-\d\d-\d\dT[0-9:.]+Z"`)
	doctorDuration = regexp.MustCompile(`\b(\d+h)?(\d+m)?\d+(\.\d+)?(ms|s)\b`)
	doctorVolatile = regexp.MustCompile(`"(\w*Millis\w*|observedWritesPerSecond|recommendedWCU|readCapacityUnits|readUnitsPerScan|estimatedRCU|readUnitsPerSecond|writeUnitsPerSecond)": [0-9.e+-]+`)
	// a scan's read units vary with the table's size as the run left it
	doctorRCU      = regexp.MustCompile(`[0-9.]+ RCU`)
	doctorObserved = regexp.MustCompile(`counter increments seen: [0-9.]+`)
)

// normalizeDoctor masks what differs between runs of a doctor report on
// the same scenario: times, measured durations and rates, generated names.
func normalizeDoctor(s string) string {
	// names inside quoted JSON strings end at the escaped quote
	s = doctorName.ReplaceAllString(s, "<$1>")
	s = normalize(s)
	s = doctorTime.ReplaceAllString(s, `"<time>"`)
	s = doctorVolatile.ReplaceAllString(s, `"$1": <n>`)
	s = doctorObserved.ReplaceAllString(s, "counter increments seen: <n>")
	s = doctorRCU.ReplaceAllString(s, "<n> RCU")
	return doctorDuration.ReplaceAllString(s, "<dur>")
}
