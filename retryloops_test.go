package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"
)

// allowedRetryLoops are hand-written retry loops kept on purpose, keyed by
// "path function", with the reason backoff.Retry does not fit. None today.
var allowedRetryLoops = map[string]string{}

// Retries in the domain packages go through backoff.Retry: a `for` whose
// init declares `attempt` is a retry loop written by hand, which is where
// attempt counts, waits and the error after a cut wait drift apart.
func TestDomainRetriesUseTheHelper(t *testing.T) {
	checkDomainFiles(t, retryLoops, allowedRetryLoops, "allowedRetryLoops")
}

func retryLoops(t *testing.T, path string) []violation {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var out []violation
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			loop, ok := n.(*ast.ForStmt)
			if !ok || !declaresAttempt(loop.Init) {
				return true
			}
			out = append(out, violation{
				key:   filepath.ToSlash(path) + " " + fn.Name.Name,
				where: fset.Position(loop.Pos()).String(),
				what:  "hand-written retry loop in " + fn.Name.Name + ": use backoff.Retry",
			})
			return true
		})
	}
	return out
}

// declaresAttempt reports a loop init such as `attempt := 1`.
func declaresAttempt(init ast.Stmt) bool {
	assign, ok := init.(*ast.AssignStmt)
	if !ok || assign.Tok != token.DEFINE {
		return false
	}
	for _, lhs := range assign.Lhs {
		if id, ok := lhs.(*ast.Ident); ok && id.Name == "attempt" {
			return true
		}
	}
	return false
}
