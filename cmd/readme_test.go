package cmd

import (
	"os"
	"strings"
	"testing"
)

// TestREADMESampleHandlerIsTheExample keeps the README's sample handler and
// examples/handler.sh, which `make demo` runs, the same text: the sample a
// reader copies is the one that was exercised.
func TestREADMESampleHandlerIsTheExample(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("../examples/handler.sh")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "#### A sample handler\n")
	if !ok {
		t.Fatal("README has no \"A sample handler\" section")
	}
	_, block, ok := strings.Cut(after, "```sh\n")
	if !ok {
		t.Fatal("the sample handler section has no sh block")
	}
	block, _, _ = strings.Cut(block, "```\n")
	if block != string(example) {
		t.Errorf("README sample handler and examples/handler.sh differ:\n--- README\n%s\n--- examples/handler.sh\n%s", block, example)
	}
}
