package cmd

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestHandlerPageSampleIsTheExample keeps the sample handler of the handler
// contract (docs/handler.md) and examples/handler.sh, which `make demo` runs,
// the same text: the sample a reader copies is the one that was exercised.
func TestHandlerPageSampleIsTheExample(t *testing.T) {
	page, err := os.ReadFile("../docs/handler.md")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("../examples/handler.sh")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(page), "## A sample handler\n")
	if !ok {
		t.Fatal("docs/handler.md has no \"A sample handler\" section")
	}
	_, block, ok := strings.Cut(after, "```sh\n")
	if !ok {
		t.Fatal("the sample handler section has no sh block")
	}
	block, _, _ = strings.Cut(block, "```\n")
	if block != string(example) {
		t.Errorf("docs/handler.md sample handler and examples/handler.sh differ:\n--- docs/handler.md\n%s\n--- examples/handler.sh\n%s", block, example)
	}
}

// TestReadmeMakeTargetsExist: every `make TARGET` the README tells a reader
// to run is a target of the Makefile, so the install and quick-start lines
// cannot point at a target that was renamed or never written.
func TestReadmeMakeTargetsExist(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([a-z][a-z0-9-]*):`).FindAllStringSubmatch(string(makefile), -1) {
		targets[m[1]] = true
	}
	named := regexp.MustCompile("(?m)(?:`|^)make ([a-z][a-z0-9-]*)").FindAllStringSubmatch(string(readme), -1)
	if len(named) == 0 {
		t.Fatal("the README names no make target")
	}
	for _, m := range named {
		if !targets[m[1]] {
			t.Errorf("README.md says `make %s`, which the Makefile does not have", m[1])
		}
	}
	// The README opens with the two commands a fresh clone runs.
	if demo, test := strings.Index(string(readme), "make demo"), strings.Index(string(readme), "make test"); demo < 0 || test < 0 || demo > 2000 || test > 2000 {
		t.Errorf("README.md does not open with make demo and make test (at %d and %d)", demo, test)
	}
}
