package cmd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// alertRules is the shape of a Prometheus rule file
// (prometheus/model/rulefmt): decoding with KnownFields rejects any key
// Prometheus would not know.
type alertRules struct {
	Groups []struct {
		Name     string      `yaml:"name"`
		Interval string      `yaml:"interval"`
		Rules    []alertRule `yaml:"rules"`
	} `yaml:"groups"`
}

type alertRule struct {
	Alert         string            `yaml:"alert"`
	Record        string            `yaml:"record"`
	Expr          string            `yaml:"expr"`
	For           string            `yaml:"for"`
	KeepFiringFor string            `yaml:"keep_firing_for"`
	Labels        map[string]string `yaml:"labels"`
	Annotations   map[string]string `yaml:"annotations"`
}

var (
	promDuration  = regexp.MustCompile(`^([0-9]+(ms|s|m|h|d|w|y))+$`)
	promName      = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	kcltoolMetric = regexp.MustCompile(`\bkcltool_[a-z0-9_]+`)
)

// readAlertRules reads docs/alerts.yaml; the test fails unless it is a
// rule file Prometheus loads (alertRuleProblems).
func readAlertRules(t *testing.T) alertRules {
	t.Helper()
	root, err := emulator.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "docs", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rules, problems := alertRuleProblems(raw)
	for _, p := range problems {
		t.Errorf("docs/alerts.yaml: %s", p)
	}
	return rules
}

// alertRuleProblems decodes a rule file and says what Prometheus would
// refuse in it, and what an on-call engineer would miss: groups with
// unique names and rules, each rule an alert with a unique name, an
// expression, a duration in for, a severity, a summary, and a description
// that says what to run or set.
func alertRuleProblems(raw []byte) (alertRules, []string) {
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	var rules alertRules
	if err := dec.Decode(&rules); err != nil {
		return rules, []string{err.Error()}
	}
	var problems []string
	if len(rules.Groups) == 0 {
		problems = append(problems, "no groups")
	}
	groups, alerts := map[string]bool{}, map[string]bool{}
	for _, g := range rules.Groups {
		if g.Name == "" || groups[g.Name] || len(g.Rules) == 0 {
			problems = append(problems, fmt.Sprintf("group %q: a group needs a unique name and rules", g.Name))
		}
		groups[g.Name] = true
		for _, r := range g.Rules {
			switch {
			case r.Record != "" || !promName.MatchString(r.Alert) || alerts[r.Alert]:
				problems = append(problems, fmt.Sprintf("rule %q (record %q): every rule is an alert with a unique, valid name", r.Alert, r.Record))
			case strings.TrimSpace(r.Expr) == "" || strings.Count(r.Expr, "(") != strings.Count(r.Expr, ")"):
				problems = append(problems, fmt.Sprintf("alert %s: expression %q is empty or unbalanced", r.Alert, r.Expr))
			case r.For != "" && !promDuration.MatchString(r.For):
				problems = append(problems, fmt.Sprintf("alert %s: for %q is not a Prometheus duration", r.Alert, r.For))
			case !slices.Contains([]string{"critical", "warning", "info"}, r.Labels["severity"]):
				problems = append(problems, fmt.Sprintf("alert %s: severity %q, want critical, warning or info", r.Alert, r.Labels["severity"]))
			case r.Annotations["summary"] == "" || !strings.Contains(r.Annotations["description"], "kcltool ") && !strings.Contains(r.Annotations["description"], "--"):
				problems = append(problems, fmt.Sprintf("alert %s: needs a summary, and a description that says what to run or set", r.Alert))
			}
			alerts[r.Alert] = true
		}
	}
	return rules, problems
}

// docs/alerts.yaml is a rule file Prometheus loads, and the check finds
// what it would refuse.
func TestAlertRulesFileIsWellFormed(t *testing.T) {
	if names := alertMetrics(readAlertRules(t)); len(names) < 8 {
		t.Errorf("the rules use only %v", names)
	}
	for _, c := range []struct{ name, file, want string }{
		{"a key Prometheus does not know", "groups:\n  - name: g\n    rules:\n      - alert: A\n        expression: up == 0\n", "field expression not found"},
		{"a duration in words", "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up == 0\n        for: 5 minutes\n", "not a Prometheus duration"},
		{"no severity", "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up == 0\n", "severity"},
		{"a recording rule", "groups:\n  - name: g\n    rules:\n      - record: a:b\n        expr: up\n", "every rule is an alert"},
		{"an unbalanced expression", "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: sum(up == 0\n", "unbalanced"},
		{"no advice", "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up == 0\n        labels: {severity: critical}\n        annotations: {summary: down, description: it is down}\n", "what to run or set"},
	} {
		if _, problems := alertRuleProblems([]byte(c.file)); !strings.Contains(strings.Join(problems, "\n"), c.want) {
			t.Errorf("%s: problems %q, want one saying %q", c.name, problems, c.want)
		}
	}
}

// alertMetrics are the kcltool_* names the rules' expressions use, a
// histogram's series (_bucket, _sum, _count) by their family's name.
func alertMetrics(rules alertRules) []string {
	var names []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			for _, n := range kcltoolMetric.FindAllString(r.Expr, -1) {
				if !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
		}
	}
	slices.Sort(names)
	return names
}

// exposes reports a sample of metric in a scrape: its own, or of the
// histogram it is a series of.
func exposes(scrape, metric string) bool {
	for _, line := range strings.Split(scrape, "\n") {
		if strings.HasPrefix(line, metric+"{") || strings.HasPrefix(line, metric+" ") {
			return true
		}
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(metric, suffix); ok && strings.Contains(scrape, "# TYPE "+base+" histogram\n") {
			return exposes(scrape, base+"_count")
		}
	}
	return false
}

// Every metric docs/alerts.yaml names is exposed by a running worker, so
// that no alert waits on a series that never exists; the worker reports
// its version in its start-up line and kcltool_build_info.
func TestRunExposesEveryMetricTheAlertsUse(t *testing.T) {
	names := alertMetrics(readAlertRules(t))
	s := newE2EStack(t, 1)
	s.putRound(t, keyNames(10), 0)
	w := startWorker(t, "w", nil, runArgs(s, "w", "--metrics-addr", "127.0.0.1:0", "--exec", "cat >/dev/null")...)
	base := healthBase(t, w)
	var version string
	eventuallyE2E(t, 30*time.Second, `the "worker started" line`, func() bool {
		sc := bufio.NewScanner(strings.NewReader(w.logs.String()))
		for sc.Scan() {
			var l struct{ Msg, Version string }
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "worker started" {
				version = l.Version
				return true
			}
		}
		return false
	})
	var scrape string
	eventuallyE2E(t, 30*time.Second, "the shard's first checkpoint", func() bool {
		scrape = scrapeURL(t, base+"/metrics")
		return exposes(scrape, "kcltool_shard_checkpoints_total") && !strings.Contains(scrape, `kcltool_shard_checkpoints_total{app="`+s.app+`",stream="`+s.stream+`",shard="shardId-000000000000"} 0`)
	})

	var missing []string
	for _, n := range names {
		if !exposes(scrape, n) {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		t.Errorf("docs/alerts.yaml uses %v, which a running worker does not expose:\n%s", missing, scrape)
	}

	build := regexp.MustCompile(`(?m)^kcltool_build_info\{version="([^"]*)",commit="([^"]*)",goversion="([^"]*)"\} 1$`).FindStringSubmatch(scrape)
	if build == nil || version == "" || build[1] != version || build[2] == "" || build[3] != runtime.Version() {
		t.Errorf("kcltool_build_info %q; want version %q (the start-up line's), a commit and goversion %s", build, version, runtime.Version())
	}
	w.signal(t, syscall.SIGTERM)
	if code := w.exitCode(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
}
