package shellquote

import (
	"os/exec"
	"strings"
	"testing"
)

// Every word comes back from a real sh exactly as it went in, however
// awkward; words made of safe characters only stay bare, so that printed
// commands read like typed ones.
func TestQuoteRoundTripsThroughSh(t *testing.T) {
	words := []string{
		"", "orders", "shardId-000000000003", "123456789012:orders:1700000000:shardId-000000000001",
		"/home/me/.local/state/kcltool/backups/kcltool-reset-orders-20261101T100512.000Z.backup.json",
		"ops team", "it's", "'", "''", `"`, `\`, `a\'b`, "$HOME", "${x}", "`id`", "$(id)", "a;b", "a|b", "a&b",
		"~", "~root", "*", "?", "[a]", "{a,b}", "#x", "x#y", "!x", "a\nb", "\t", " ", "-n", "-e", "=ls", "a=b",
		"ü", `{"S":"it's"}`, "a,b,c",
	}
	for _, w := range words {
		q := Quote(w)
		// printf keeps each word byte for byte (echo may read -n, -e or \),
		// ending it with a NUL, which no word here holds.
		out, err := exec.Command("sh", "-c", "printf '%s\\000' "+q).Output()
		if err != nil {
			t.Fatalf("sh -c for %q (quoted %s): %v", w, q, err)
		}
		if got := strings.TrimSuffix(string(out), "\x00"); got != w {
			t.Errorf("Quote(%q) = %s; sh reads it back as %q", w, q, got)
		}
		if strings.Count(string(out), "\x00") != 1 {
			t.Errorf("Quote(%q) = %s is more than one word to sh: %q", w, q, out)
		}
	}
	for w, want := range map[string]string{
		"orders":               "orders",
		"shardId-000000000003": "shardId-000000000003",
		"a,b":                  "a,b",
		"":                     "''",
		"ops team":             "'ops team'",
		"it's":                 `'it'\''s'`,
		"=ls":                  "'=ls'",
		"~":                    "'~'",
	} {
		if got := Quote(w); got != want {
			t.Errorf("Quote(%q) = %s, want %s", w, got, want)
		}
	}
}
