package cmdutil

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// Durations are logged as Go duration strings in both formats, nested in
// groups and in loggers' With attributes too, never as nanoseconds.
func TestLoggerWritesDurationsAsText(t *testing.T) {
	for format, want := range map[string][]string{
		"json": {`"failover":"10s"`, `"grace":"1m30s"`, `"retry":{"in":"250ms"}`},
		"text": {`failover=10s`, `grace=1m30s`, `retry.in=250ms`},
	} {
		var buf bytes.Buffer
		log, err := NewLogger("info", format, &buf, false)
		if err != nil {
			t.Fatal(err)
		}
		log.With("failover", 10*time.Second).Info("x", "grace", 90*time.Second, slog.Group("retry", "in", 250*time.Millisecond))
		for _, w := range want {
			if !strings.Contains(buf.String(), w) {
				t.Errorf("%s log %q lacks %s", format, buf.String(), w)
			}
		}
	}
}

func TestLoggerFlagsAreChecked(t *testing.T) {
	if _, err := NewLogger("loud", "json", &bytes.Buffer{}, false); err == nil || ExitCode(t.Context(), err) != ExitUsage {
		t.Errorf("--log-level loud: %v", err)
	}
	if _, err := NewLogger("info", "yaml", &bytes.Buffer{}, false); err == nil || ExitCode(t.Context(), err) != ExitUsage {
		t.Errorf("--log-format yaml: %v", err)
	}
	var buf bytes.Buffer
	log, _ := NewLogger("warn", "auto", &buf, true)
	log.Info("hidden")
	log.Warn("shown")
	if strings.Contains(buf.String(), "hidden") || !strings.HasPrefix(buf.String(), "time=") {
		t.Errorf("auto on a terminal at warn: %q, want text without info", buf.String())
	}
}
