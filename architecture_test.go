package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// domainPackages are the folders below cmd (docs/development.md): they take
// time only from an injected clock and never read the environment or end
// the process. Their sub-folders are included; testdata folders hold helper
// programs of the tests, not domain code.
var domainPackages = []string{"leasecore", "reshard", "inspect", "reset", "runner", "fanout", "kinesisrec", "iampolicy"}

// forbiddenCalls are the calls that would read the system clock, the
// environment or end the process behind the caller's back.
var forbiddenCalls = map[string][]string{
	"time": {"Now", "Since", "Until", "Sleep", "NewTimer", "After", "AfterFunc", "Tick", "NewTicker"},
	"os":   {"Getenv", "Environ", "LookupEnv", "Exit"},
}

// allowedCalls are the exceptions, by file and call, each with its reason.
var allowedCalls = map[string]string{
	"leasecore/clock.go time.Now":      "the real clock itself: what RealClock returns",
	"leasecore/clock.go time.NewTimer": "the real clock itself: what RealClock returns",
}

// forbiddenImports are the cmd layer's own libraries.
var forbiddenImports = []string{"github.com/spf13/cobra", "github.com/charmbracelet/lipgloss", "github.com/olekukonko/tablewriter"}

// The domain packages keep the project's rules: time from the injected
// clock, the environment from the caller, no os.Exit, no CLI libraries. A
// new call is either moved to the clock or the caller, or added to
// allowedCalls with its reason.
func TestDomainPackagesKeepTheRules(t *testing.T) {
	var found []string
	used := map[string]bool{}
	for _, dir := range domainPackages {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			for _, v := range violations(t, path) {
				if _, ok := allowedCalls[v.key]; ok {
					used[v.key] = true
					continue
				}
				found = append(found, v.where+": "+v.what)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(found)
	for _, f := range found {
		t.Error(f)
	}
	for key := range allowedCalls {
		if !used[key] {
			t.Errorf("allowedCalls has %q, which no longer occurs: remove it", key)
		}
	}
}

type violation struct{ key, where, what string }

// violations lists the forbidden calls and imports of one file. Calls are
// found through the file's own name for the package, so an import alias
// does not hide them.
func violations(t *testing.T, path string) []violation {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	slash := filepath.ToSlash(path)
	var out []violation
	names := map[string]string{} // local name -> import path, for time and os
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		for _, bad := range forbiddenImports {
			if p == bad || strings.HasPrefix(p, bad+"/") {
				out = append(out, violation{where: fset.Position(imp.Pos()).String(), what: "imports " + p})
			}
		}
		if _, ok := forbiddenCalls[p]; ok {
			name := p
			if imp.Name != nil {
				name = imp.Name.Name
			}
			names[name] = p
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		pkg, ok := names[id.Name]
		if !ok {
			return true
		}
		for _, fn := range forbiddenCalls[pkg] {
			if sel.Sel.Name == fn {
				call := pkg + "." + fn
				out = append(out, violation{key: slash + " " + call, where: fset.Position(sel.Pos()).String(), what: call})
			}
		}
		return true
	})
	return out
}
