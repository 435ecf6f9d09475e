package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// domainPackages are the folders below cmd (docs/development.md): they take
// time only from an injected clock and never read the environment or end
// the process. Their sub-folders are included; testdata folders hold helper
// programs of the tests, not domain code.
var domainPackages = []string{"leasecore", "reshard", "inspect", "reset", "runner", "fanout", "kinesisrec", "iampolicy", "coordination"}

// forbiddenCalls are the calls that would read the system clock, the
// environment or end the process behind the caller's back.
var forbiddenCalls = map[string][]string{
	"time": {"Now", "Since", "Until", "Sleep", "NewTimer", "After", "AfterFunc", "Tick", "NewTicker"},
	"os":   {"Getenv", "Environ", "LookupEnv", "Exit"},
}

// allowedCalls are the exceptions, by file and call, each with its reason.
// The real clock itself lives in internal/clock, outside the domain
// packages, so none is needed today.
var allowedCalls = map[string]string{}

// forbiddenImports are the cmd layer's own libraries.
var forbiddenImports = []string{"github.com/spf13/cobra", "github.com/charmbracelet/lipgloss", "github.com/charmbracelet/bubbletea", "github.com/olekukonko/tablewriter"}

// The domain packages keep the project's rules: time from the injected
// clock, the environment from the caller, no os.Exit, no CLI libraries. A
// new call is either moved to the clock or the caller, or added to
// allowedCalls with its reason.
func TestDomainPackagesKeepTheRules(t *testing.T) {
	checkDomainFiles(t, violations, allowedCalls, "allowedCalls")
}

// checkDomainFiles runs check on every non-test Go file of the domain
// packages and reports what it finds outside allowed, and every entry of
// allowed (named name) that no longer occurs.
func checkDomainFiles(t *testing.T, check func(*testing.T, string) []violation, allowed map[string]string, name string) {
	t.Helper()
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
			for _, v := range check(t, path) {
				if _, ok := allowed[v.key]; ok {
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
	for key := range allowed {
		if !used[key] {
			t.Errorf("%s has %q, which no longer occurs: remove it", name, key)
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

// flagName finds a flag's name (--stream) in a string.
var flagName = regexp.MustCompile(`(^|[^-\w])(--[a-z][a-z0-9-]*)`)

// allowedFlagErrors are the domain errors that still name a flag, by file
// and flag, each with its reason. Texts meant for the user as they are
// (doctor's causes and fixes, metric help, printed repair commands) are
// not errors and are not checked.
var allowedFlagErrors = map[string]string{
	"runner/shardend.go --table":   "a kcltool checkpoint reset command printed for the user to run, like doctor's repair commands",
	"runner/shardend.go --stream":  "a kcltool checkpoint reset command printed for the user to run, like doctor's repair commands",
	"runner/shardend.go --shard":   "a kcltool checkpoint reset command printed for the user to run, like doctor's repair commands",
	"runner/shardend.go --to":      "a kcltool checkpoint reset command printed for the user to run, like doctor's repair commands",
	"runner/shardend.go --execute": "a kcltool checkpoint reset command printed for the user to run, like doctor's repair commands",
}

// Errors returned by domain packages name settings, not flags: the flags
// are cmd's, which says them. The check reads the string literals in
// errors.New, fmt.Errorf and *Errorf calls, and in Error methods.
func TestDomainErrorsNameNoFlag(t *testing.T) {
	checkDomainFiles(t, flagErrors, allowedFlagErrors, "allowedFlagErrors")
}

func flagErrors(t *testing.T, path string) []violation {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	slash := filepath.ToSlash(path)
	var out []violation
	literals := func(n ast.Node) {
		ast.Inspect(n, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			for _, m := range flagName.FindAllStringSubmatch(lit.Value, -1) {
				out = append(out, violation{key: slash + " " + m[2], where: fset.Position(lit.Pos()).String(), what: "error names " + m[2]})
			}
			return true
		})
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			if n.Recv != nil && n.Name.Name == "Error" && n.Body != nil {
				literals(n.Body)
				return false
			}
		case *ast.CompositeLit:
			if isErrorType(n.Type) {
				literals(n)
				return false
			}
		case *ast.CallExpr:
			if isErrorConstructor(n.Fun) {
				for _, a := range n.Args {
					literals(a)
				}
				return false
			}
		}
		return true
	})
	return out
}

// isErrorConstructor: errors.New, fmt.Errorf, and a package's own
// inputErrorf-style helpers.
func isErrorConstructor(fun ast.Expr) bool {
	if fn, ok := fun.(*ast.SelectorExpr); ok {
		if x, ok := fn.X.(*ast.Ident); ok && x.Name == "errors" && fn.Sel.Name == "New" {
			return true
		}
	}
	return strings.HasSuffix(exprName(fun), "Errorf")
}

// isErrorType: a composite literal of a type named *Error (its fields'
// texts end up in Error()).
func isErrorType(typ ast.Expr) bool { return strings.HasSuffix(exprName(typ), "Error") }

// exprName is the name an identifier or a selector (pkg.Name) ends in, ""
// for anything else.
func exprName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}

// The binary links only production code: test support (internal/testenv)
// and the programs make runs (internal/tools) stay out of its import graph,
// so a test helper can never become a dependency of the shipped binary.
func TestBinaryLinksNoTestSupport(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	var linked int
	for _, pkg := range strings.Fields(string(out)) {
		if !strings.HasPrefix(pkg, "github.com/kcltool/kcltool/") {
			continue
		}
		linked++
		for _, banned := range []string{"/internal/testenv/", "/internal/tools/"} {
			if strings.Contains(pkg+"/", banned) {
				t.Errorf("the binary links %s; test support and make's programs must stay out of it", pkg)
			}
		}
	}
	if linked < 10 {
		t.Fatalf("go list -deps found only %d kcltool packages; the check would prove nothing:\n%s", linked, out)
	}
}

// importRules say, per folder (its sub-folders included), which of the
// module's packages its files may not import (a prefix covers the
// sub-packages). coordination sits beside leasecore and below runner
// (coordination/doc.go): leasecore never imports it, and it imports none of
// the packages that will use it.
var importRules = map[string][]string{
	"leasecore":    {"coordination"},
	"coordination": {"runner", "inspect", "reset", "cmd"},
}

// TestCoordinationImportRule checks importRules on every Go file, tests
// included (an external test package could otherwise pull the layer in).
func TestCoordinationImportRule(t *testing.T) {
	const module = "github.com/kcltool/kcltool/"
	for dir, banned := range importRules {
		files := 0
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") {
				return nil
			}
			files++
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				for _, b := range banned {
					if p == module+b || strings.HasPrefix(p, module+b+"/") {
						t.Errorf("%s imports %s: %s must not import %s (coordination/doc.go)", path, p, dir, b)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if files == 0 {
			t.Errorf("no Go files in %s: the rule checks nothing", dir)
		}
	}
}
