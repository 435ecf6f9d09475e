package cmd

import (
	"bytes"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/kcltool/kcltool/leasecore"
)

// readItems reads DynamoDB-JSON items: a .jsonl file holds one per line,
// any other file exactly one.
func readItems(ts *testscript.TestScript, path string) []map[string]types.AttributeValue {
	data, err := os.ReadFile(path)
	ts.Check(err)
	chunks := [][]byte{data}
	if strings.HasSuffix(path, ".jsonl") {
		chunks = bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	}
	var items []map[string]types.AttributeValue
	for _, c := range chunks {
		item, err := leasecore.UnmarshalItemJSON(c)
		ts.Check(err)
		items = append(items, item)
	}
	return items
}

// scriptTB lets the emulator helpers fail a script.
type scriptTB struct{ ts *testscript.TestScript }

func (s scriptTB) Helper()                        {}
func (s scriptTB) Fatalf(format string, a ...any) { s.ts.Fatalf(format, a...) }
