package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// TestRunPropertiesEndToEnd: a worker configured by a properties file
// alone (plus --exec and --create-table) reads and checkpoints against the
// local servers. The endpoints reach it only through kinesisEndpoint and
// dynamoDBEndpoint, each for its own service, and the credentials through
// EnvironmentVariableCredentialsProvider.
func TestRunPropertiesEndToEnd(t *testing.T) {
	s := newE2EStack(t, 2)
	dir := t.TempDir()
	out := filepath.Join(dir, "out.jsonl")
	props := filepath.Join(dir, "app.properties")
	body := fmt.Sprintf(`# as a MultiLangDaemon user writes it
applicationName = %s
streamName = %s
regionName = %s
kinesisEndpoint = %s
dynamoDBEndpoint = %s
AwsCredentialsProvider = EnvironmentVariableCredentialsProvider
workerId = props-worker
initialPositionInStream = TRIM_HORIZON
RetrievalMode = POLLING
idleTimeBetweenReadsInMillis = 200
failoverTimeMillis = 2000
shardSyncIntervalMillis = 2000
processingLanguage = go
`, s.app, s.stream, emulator.Region, emulator.KinesisEndpoint(t), emulator.DynamoDBEndpoint(t))
	if err := os.WriteFile(props, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	// No endpoint and no region in the environment: only the file has them.
	env := []string{"OUT=" + out, "AWS_ENDPOINT_URL_DYNAMODB=", "AWS_ENDPOINT_URL_KINESIS=", "AWS_REGION="}
	w := startWorker(t, "props", env, "run", "--properties", props, "--create-table", "--kcl-version", "2", "--log-format", "json", "--exec", `cat >> "$OUT"`)
	s.putRound(t, keyNames(20), 0)
	eventuallyE2E(t, 60*time.Second, "20 records", func() bool { return len(records(t, out)) >= 20 })
	eventuallyE2E(t, 30*time.Second, "props-worker to hold both leases", func() bool { return s.owners(t)["props-worker"] == 2 })
	w.signal(t, syscall.SIGTERM)
	if code := w.exitCode(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM, want 0", code)
	}
	checkpointed := 0
	for _, l := range s.leases(t) {
		if l.Checkpoint.SequenceNumber != "TRIM_HORIZON" {
			checkpointed++
		}
	}
	if checkpointed == 0 {
		t.Errorf("no lease was checkpointed: %+v", s.leases(t))
	}
}
