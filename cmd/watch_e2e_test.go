package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// watchEvent is a line of `--watch -o json` as a script reads it.
type watchEvent struct {
	Time    time.Time `json:"time"`
	Type    string    `json:"type"`
	Initial bool      `json:"initial"`
	Key     string    `json:"key"`
	Changed []struct {
		Field   string          `json:"field"`
		RawFrom json.RawMessage `json:"from"`
		RawTo   json.RawMessage `json:"to"`
	} `json:"changed"`
	Object map[string]any `json:"object"`
}

// events are the JSON lines a watching process printed so far (its log
// mixes in stderr's lines, which do not start with "{").
func events(t *testing.T, w *worker) []watchEvent {
	t.Helper()
	var out []watchEvent
	sc := bufio.NewScanner(strings.NewReader(w.logs.String()))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var e watchEvent
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%s printed a line that is not an event: %v\n%s", w.name, err, line)
		}
		out = append(out, e)
	}
	return out
}

// changedField reports whether the events hold a MODIFIED event for key
// whose field went from one JSON value to another.
func changedField(evs []watchEvent, key, field, from, to string) bool {
	for _, e := range evs {
		if e.Type != "MODIFIED" || e.Key != key || e.Initial {
			continue
		}
		for _, c := range e.Changed {
			if c.Field == field && string(c.RawFrom) == from && string(c.RawTo) == to {
				return true
			}
		}
	}
	return false
}

// `leases ls -w` and `lag -w` with -o json, run as the binary against the
// local servers: the first read comes as ADDED events (initial), a lease
// whose owner and checkpoint change in the table comes as one MODIFIED
// event naming both fields from and to, and Ctrl-C (SIGINT) ends the watch
// with exit 130.
func TestWatchJSONEvents(t *testing.T) {
	t.Parallel()
	s := emulator.NewStreamAndTable(t, 2)
	seqs := putOnePerShard(t, s.Kinesis, s.Stream, 2)
	const shard = "shardId-000000000000"
	for id := range seqs {
		l := leasecore.Lease{LeaseKey: id, LeaseOwner: "worker-a", Checkpoint: leasecore.SequenceNumber{SequenceNumber: leasecore.TRIM_HORIZON}}
		if _, err := leasecore.CreateLease(context.Background(), s.DynamoDB, s.Table, l); err != nil {
			t.Fatal(err)
		}
	}
	ls := startWorker(t, "leases-ls", nil, "leases", "ls", "--app", s.Table, "-w", "-o", "json", "--interval", "1s")
	lag := startWorker(t, "lag", nil, "lag", "--app", s.Table, "--stream", s.Stream, "--watch", "-o", "json", "--interval", "1s")
	for _, w := range []*worker{ls, lag} {
		eventuallyE2E(t, 60*time.Second, w.name+"'s initial events", func() bool {
			n := 0
			for _, e := range events(t, w) {
				if e.Initial && e.Type == "ADDED" && len(e.Object) > 0 {
					n++
				}
			}
			return n == len(seqs)
		})
	}
	// Another worker takes the lease and checkpoints the shard's record.
	_, err := s.DynamoDB.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(s.Table), Key: map[string]ddbtypes.AttributeValue{"leaseKey": &ddbtypes.AttributeValueMemberS{Value: shard}},
		UpdateExpression: aws.String("SET leaseOwner = :o, checkpoint = :c, leaseCounter = leaseCounter + :one"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
			":o": &ddbtypes.AttributeValueMemberS{Value: "worker-b"}, ":c": &ddbtypes.AttributeValueMemberS{Value: seqs[shard]},
			":one": &ddbtypes.AttributeValueMemberN{Value: "1"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	checkpoint := `"` + seqs[shard] + `"`
	eventuallyE2E(t, 60*time.Second, "leases ls's MODIFIED event", func() bool {
		evs := events(t, ls)
		return changedField(evs, shard, "leaseOwner", `"worker-a"`, `"worker-b"`) &&
			changedField(evs, shard, "checkpoint", `"TRIM_HORIZON"`, checkpoint)
	})
	eventuallyE2E(t, 60*time.Second, "lag's MODIFIED event", func() bool {
		evs := events(t, lag)
		key := s.Stream + "/" + shard
		return changedField(evs, key, "leaseOwner", `"worker-a"`, `"worker-b"`) &&
			changedField(evs, key, "checkpoint", `"TRIM_HORIZON"`, checkpoint)
	})
	// Only the changed lease moved: the other is not in any later event
	// (its counter is not watched).
	for _, e := range events(t, ls) {
		if !e.Initial && e.Key != shard {
			t.Errorf("leases ls printed a change of %s, which did not change: %+v", e.Key, e)
		}
	}
	// Every line has the documented keys (docs/json.md, jsonSchemas), all
	// of them reached by the events above.
	c := &schemaChecker{t: t, reached: map[string]map[string]bool{}}
	for _, w := range []*worker{ls, lag} {
		for _, line := range strings.Split(w.logs.String(), "\n") {
			if strings.HasPrefix(line, "{") {
				c.document("watch events", w.name+" -w -o json", line)
			}
		}
	}
	for _, k := range jsonSchema("watch events").Keys {
		if !c.reached["watch events"][k.Path] {
			t.Errorf("watch events: documented key %q never reached", k.Path)
		}
	}
	for _, w := range []*worker{ls, lag} {
		w.signal(t, syscall.SIGINT)
		if code := w.exitCode(t, 30*time.Second); code != 130 {
			t.Errorf("%s: exit %d after SIGINT, want 130\n%s", w.name, code, w.logs.String())
		}
	}
}
