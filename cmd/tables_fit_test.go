package cmd

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kcltool/kcltool/cmd/cmdutil"
)

// tableCommands are the read commands that print a table, as the golden
// files of TestTablesFitTheTerminal name them, run on everyStateScenario.
func tableCommands(s *scenario) [][]string {
	return [][]string{
		{"lag", "--app", s.table, "--stream", s.stream},
		{"lineage", "--app", s.table, "--stream", s.stream},
		{"leases", "ls", "--app", s.table},
		{"leases", "owners", "--app", s.table},
		// --max-behind 1h: the behind shard's records age with the test, and
		// a run slowed past a minute by a loaded machine (CI) added a
		// shard-lag finding to the golden output.
		{"doctor", "--app", s.table, "--stream", s.stream, "--failover-time", "500ms", "--window", "1s", "--max-behind", "1h", "--no-cloudwatch"},
	}
}

var (
	doctorTimes = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)
	doctorSpan  = regexp.MustCompile(`over [0-9.]+m?s`)
	anyDigit    = regexp.MustCompile(`\d`)
	// A shard id cut by wrapping: "shardId-" and fewer than its 12 digits.
	brokenShardID = regexp.MustCompile(`shardId-(\d{0,11})(\D|$)`)
	// The behind shard's BEHIND depends on when the test ran.
	behindCell = regexp.MustCompile(`(<1s|\d+m\d+s|\d+s) +behind`)
)

// TestTablesFitTheTerminal: with COLUMNS set (as `watch` sets it; a
// terminal's width is read the same way) every table command's output fits
// 80 columns, sequence numbers shortened and long text wrapped, and at 200
// columns the rows are one line each; golden files pin both. Without
// COLUMNS (a pipe) the values are whole.
func TestTablesFitTheTerminal(t *testing.T) {
	t.Parallel()
	s := everyStateScenario(t)
	for _, args := range tableCommands(s) {
		name := args[0] // "lag", "leases-ls", "doctor"
		if !strings.HasPrefix(args[1], "-") {
			name = args[0] + "-" + args[1]
		}
		var all strings.Builder
		for _, cols := range []int{80, 200} {
			out, errOut, code := kcltoolEnv(t, []string{fmt.Sprintf("COLUMNS=%d", cols)}, args...)
			if code != 0 && !(args[0] == "doctor" && code == 3) {
				t.Fatalf("%s: exit %d: %s", name, code, errOut)
			}
			for _, l := range strings.Split(out, "\n") {
				if w := utf8.RuneCountInString(l); w > cols {
					t.Errorf("%s at %d columns: a line of %d: %q", name, cols, w, l)
				}
			}
			// Identifiers stay whole: columns the command can spare go
			// first, and stderr says which.
			if m := brokenShardID.FindString(out); m != "" {
				t.Errorf("%s at %d columns: a shard id broken over two lines (%q):\n%s", name, cols, m, out)
			}
			for _, l := range strings.Split(errOut, "\n") {
				if strings.Contains(l, "hidden to fit") {
					out += "## stderr: " + l + "\n"
				}
			}
			if longDigits.MatchString(out) {
				t.Errorf("%s at %d columns: a whole sequence number in a fitted table:\n%s", name, cols, out)
			}
			if args[0] == "doctor" {
				// The header holds the window's measured length, so it
				// wraps at a place that varies from run to run.
				if _, rest, ok := strings.Cut(out, "\n\n"); ok {
					out = "<header>\n\n" + rest
				}
				out = doctorSpan.ReplaceAllString(doctorTimes.ReplaceAllString(out, "<time>"), "over <window>")
				if i := strings.Index(out, "\ncost: "); i >= 0 {
					out = out[:i+1] // what the run cost varies with its timing
				}
			}
			out = behindCell.ReplaceAllStringFunc(out, func(m string) string { return "<t>" + strings.Repeat(" ", len(m)-len("<t>behind")) + "behind" })
			fmt.Fprintf(&all, "## COLUMNS=%d\n%s", cols, out)
		}
		checkColumnNames(t, name, args)
		// Every digit is 0 in the golden file: a shortened sequence number
		// wrapped over two lines escapes normalize, and BEHIND varies.
		golden(t, "tables/"+name+".txt", anyDigit.ReplaceAllString(normalize(all.String()), "0"))
	}
	// lag's filters and the table flags, through the binary.
	lag := []string{"lag", "--app", s.table, "--stream", s.stream}
	if out, e, code := kcltoolEnv(t, nil, append(lag, "--state", "blocked,at-tip", "--shard", shardID(7)+","+shardID(3)+","+shardID(2), "--columns", "shard-id", "--no-headers", "-o", "csv")...); code != 0 || out != shardID(3)+"\n"+shardID(7)+"\n" {
		t.Errorf("lag --state --shard --columns --no-headers -o csv: exit %d %q %s", code, out, e)
	}
	if _, e, code := kcltoolEnv(t, nil, append(lag, "--state", "late")...); code != 2 || !strings.Contains(e, "invalid --state \"late\": use ") {
		t.Errorf("--state late: exit %d %q", code, e)
	}
	if _, e, code := kcltoolEnv(t, nil, append(lag, "--sort-by", "age")...); code != 2 || !strings.Contains(e, "use stream, shard, lease-owner, checkpoint") {
		t.Errorf("--sort-by age: exit %d %q", code, e)
	}
	// A misspelt column stops doctor before it reads for its window.
	if _, e, code := kcltoolEnv(t, nil, "doctor", "--app", s.table, "--stream", s.stream, "--no-cloudwatch", "--columns", "severity,sumary"); code != 2 ||
		!strings.Contains(e, `invalid --columns "sumary": use severity, id, summary`) || strings.Contains(e, "reading lease table") {
		t.Errorf("doctor --columns sumary: exit %d %q", code, e)
	}
	// A pipe without COLUMNS gets whole sequence numbers.
	out, _, _ := kcltoolEnv(t, []string{"COLUMNS="}, "lag", "--app", s.table, "--stream", s.stream)
	if !longDigits.MatchString(out) {
		t.Errorf("lag to a pipe shortened its sequence numbers:\n%s", out)
	}
}

// checkColumnNames: every column the command prints with -o wide is one
// of the names its --columns and --sort-by accept before any read
// (cmdutil.AddTableFlags, which completion offers too), so the early check
// never refuses a column the table has.
func checkColumnNames(t *testing.T, name string, args []string) {
	t.Helper()
	out, errOut, code := kcltoolEnv(t, []string{"COLUMNS=1000"}, append(append([]string{}, args...), "-o", "wide")...)
	if code != 0 && !(args[0] == "doctor" && code == 3) {
		t.Fatalf("%s -o wide: exit %d: %s", name, code, errOut)
	}
	root := NewRootCmd(cmdutil.NewFactory(&cmdutil.IOStreams{Out: io.Discard, ErrOut: io.Discard}, func(string) string { return "" }))
	c, _, err := root.Find(args)
	if err != nil {
		t.Fatal(err)
	}
	known := c.Flags().Lookup("columns").Annotations[cmdutil.ColumnsAnnotation]
	header := ""
	for _, l := range strings.Split(out, "\n") {
		if l != "" && l == strings.ToUpper(l) && strings.Contains(l, "  ") {
			header = l
			break
		}
	}
	if header == "" {
		t.Fatalf("%s -o wide: no header line:\n%s", name, out)
	}
	for _, h := range regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(header), -1) {
		if !slices.Contains(known, strings.ToLower(h)) {
			t.Errorf("%s -o wide prints column %q, which --columns would refuse (known: %v)", name, h, known)
		}
	}
}
