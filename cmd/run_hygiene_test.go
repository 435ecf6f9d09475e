package cmd

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kcltool/kcltool/leasecore"
)

// A handler that answers with a mis-cased batchItemFailures key and exits 0
// has its batch failed, retried and never checkpointed; the log names the
// key it found.
func TestRunMisCasedBatchItemFailuresIsNoSuccess(t *testing.T) {
	s := newE2EStack(t, 1)
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	s.putRound(t, keyNames(5), 0)
	handler := `cat > /dev/null; echo run >> "$RUNS"; echo '{"BatchItemFailures":[{"itemIdentifier":"'"$KCLTOOL_FIRST_SEQUENCE"'"}]}'`
	w := startWorker(t, "w", []string{"RUNS=" + runs}, runArgs(s, "w", "--retry-backoff", "100ms", "--exec", handler)...)
	checkpoint := func() string { return s.leases(t)["shardId-000000000000"].Checkpoint.SequenceNumber }
	eventuallyE2E(t, 30*time.Second, "the batch retried twice, or checkpointed", func() bool {
		return len(lines(t, runs)) >= 3 || len(lines(t, runs)) >= 1 && checkpoint() != leasecore.TRIM_HORIZON
	})
	w.signal(t, syscall.SIGTERM)
	if code := w.exitCode(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if cp := checkpoint(); cp != leasecore.TRIM_HORIZON {
		t.Fatalf("checkpoint %s, want TRIM_HORIZON: a mis-cased response is no success", cp)
	}
	if logs := w.logs.String(); !strings.Contains(logs, `key \"BatchItemFailures\"`) {
		t.Fatalf("the log does not name the key found:\n%s", logs)
	}
}
