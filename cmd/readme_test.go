package cmd

import (
	"os"
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
