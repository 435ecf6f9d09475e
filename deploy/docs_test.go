package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docs/deploy.md shows the handler image's Dockerfile without its
// comments: each line it shows is in the file, in the same order.
func TestDeployDocShowsTheHandlerImage(t *testing.T) {
	root := repoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```dockerfile\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/deploy.md shows no dockerfile block")
	}
	file, err := os.ReadFile(filepath.Join(root, "deploy", "handler-image", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	rest := string(file)
	for _, l := range strings.Split(strings.TrimSpace(string(m[1])), "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		i := strings.Index(rest, l+"\n")
		if i < 0 {
			t.Fatalf("docs/deploy.md shows %q, which deploy/handler-image/Dockerfile does not have (in that order)", l)
		}
		rest = rest[i+len(l):]
	}
}

// The relative links of docs/deploy.md name files that exist.
func TestDeployDocLinks(t *testing.T) {
	root := repoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`\]\(([^)#:]+)(#[^)]*)?\)`).FindAllStringSubmatch(string(doc), -1) {
		if _, err := os.Stat(filepath.Join(root, "docs", m[1])); err != nil {
			t.Errorf("docs/deploy.md links to %s: %v", m[1], err)
		}
	}
}
