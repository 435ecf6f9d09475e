package deploy

import (
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// There is no Docker engine here or in CI, so the image is checked on its
// file and on the binary its build line makes (built the same way by
// builtBinary, main_test.go).

type dfInstr struct {
	line  int
	cmd   string   // upper case: FROM, RUN, USER, ...
	flags []string // --mount=..., --from=..., --platform=...
	args  string   // the rest, continuation lines joined
}

type dfStage struct {
	image, name string
	instrs      []dfInstr
}

// parseDockerfile splits a Dockerfile into its stages. Instructions before
// the first FROM (global ARGs) are dropped: the checks do not need them.
func parseDockerfile(src string) ([]dfStage, error) {
	var stages []dfStage
	var logical string
	start := 0
	lines := strings.Split(src, "\n")
	for i, l := range lines {
		trimmed := strings.TrimSpace(l)
		if logical == "" && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if logical != "" && strings.HasPrefix(trimmed, "#") {
			continue // a comment inside a continued instruction
		}
		if logical == "" {
			start = i + 1
		}
		if strings.HasSuffix(trimmed, "\\") {
			logical += strings.TrimSuffix(trimmed, "\\") + " "
			continue
		}
		logical += trimmed
		in := dfInstr{line: start}
		fields := strings.Fields(logical)
		in.cmd = strings.ToUpper(fields[0])
		rest := strings.TrimSpace(strings.TrimPrefix(logical, fields[0]))
		for strings.HasPrefix(rest, "--") {
			flag, after, _ := strings.Cut(rest, " ")
			in.flags = append(in.flags, flag)
			rest = strings.TrimSpace(after)
		}
		in.args = rest
		logical = ""
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			st := dfStage{image: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				st.name = f[2]
			} else if len(f) != 1 {
				return nil, fmt.Errorf("line %d: FROM %s", in.line, in.args)
			}
			stages = append(stages, st)
			continue
		}
		if len(stages) > 0 {
			stages[len(stages)-1].instrs = append(stages[len(stages)-1].instrs, in)
		}
	}
	if logical != "" {
		return nil, errors.New("the last instruction ends with a continuation")
	}
	return stages, nil
}

func (in dfInstr) flag(name string) string {
	for _, f := range in.flags {
		if v, ok := strings.CutPrefix(f, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

// goBuild is the builder stage's RUN that runs go build, and its stage.
func goBuild(stages []dfStage) (dfStage, dfInstr, bool) {
	for _, st := range stages {
		for _, in := range st.instrs {
			if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
				return st, in, true
			}
		}
	}
	return dfStage{}, dfInstr{}, false
}

var (
	inlineCGO   = regexp.MustCompile(`(?:^|[\s;&|])CGO_ENABLED=(\S*)`)
	buildOutput = regexp.MustCompile(`go build .*-o (\S+)`)
	numericUser = regexp.MustCompile(`^(\d+)(?::(\d+))?$`)
	goDirective = regexp.MustCompile(`(?m)^go (\d+\.\d+)`)
)

// checkDockerfile lists what is wrong with the kcltool image's Dockerfile:
// a multi-stage build whose builder is go.mod's Go and builds with
// CGO_ENABLED=0, and a final stage that needs no shell and runs the binary
// as a numeric non-root user.
func checkDockerfile(stages []dfStage, goVersion string) []error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if len(stages) < 2 {
		bad("%d FROM stage(s): the image needs a builder stage and a final stage", len(stages))
		return errs
	}
	builder, run, ok := goBuild(stages)
	if !ok {
		bad("no RUN ... go build in any stage")
		return errs
	}
	if want := "golang:" + goVersion; builder.image != want && !strings.HasPrefix(builder.image, want+"-") && !strings.HasPrefix(builder.image, want+".") {
		bad("builder stage FROM %s: want golang:%s, go.mod's Go", builder.image, goVersion)
	}
	// CGO_ENABLED as the go build sees it: the stage's ENV, unless the RUN
	// sets it itself.
	cgo := ""
	for _, in := range builder.instrs {
		if in.cmd == "ENV" {
			if m := inlineCGO.FindStringSubmatch(" " + in.args); m != nil {
				cgo = m[1]
			}
		}
		if in.line == run.line {
			break
		}
	}
	before, _, _ := strings.Cut(run.args, "go build")
	if m := inlineCGO.FindAllStringSubmatch(before, -1); m != nil {
		cgo = m[len(m)-1][1]
	}
	if cgo != "0" {
		bad("line %d: go build runs with CGO_ENABLED=%q: want 0, a static binary", run.line, cgo)
	}
	for _, want := range []string{"-trimpath", "internal/buildinfo.version=${VERSION}", "internal/buildinfo.commit=${COMMIT}"} {
		if !strings.Contains(run.args, want) {
			bad("line %d: go build lacks %s", run.line, want)
		}
	}
	out := buildOutput.FindStringSubmatch(run.args)
	if out == nil {
		bad("line %d: go build has no -o PATH", run.line)
		return errs
	}

	final := stages[len(stages)-1]
	if final.name != "" && final.name == builder.name || final.image == builder.image {
		bad("the final stage is the builder")
	}
	user := ""
	var copied, entry string
	for _, in := range final.instrs {
		switch in.cmd {
		case "USER":
			user = in.args
		case "RUN":
			bad("line %d: RUN in the final stage: it needs a shell, which the image does not have", in.line)
		case "COPY":
			if f := in.flag("from"); f != "" && (f == builder.name || f == "0") {
				if src := strings.Fields(in.args); len(src) == 2 && src[0] == out[1] {
					copied = src[1]
				}
			}
		case "ENTRYPOINT":
			entry = in.args
		}
	}
	switch m := numericUser.FindStringSubmatch(user); {
	case user == "":
		bad("the final stage sets no USER: the binary would run as root")
	case m == nil:
		bad("USER %s: want a numeric uid (Kubernetes' runAsNonRoot cannot check a name)", user)
	case m[1] == "0" || m[2] == "0":
		bad("USER %s: root", user)
	}
	if copied == "" {
		bad("the final stage does not COPY --from=%s %s", builder.name, out[1])
	}
	var argv []string
	if err := json.Unmarshal([]byte(entry), &argv); err != nil || len(argv) == 0 {
		bad("ENTRYPOINT %s: want the exec form [\"/path\"] (the shell form needs /bin/sh)", entry)
	} else if copied != "" && argv[0] != copied {
		bad("ENTRYPOINT runs %s, not the copied binary %s", argv[0], copied)
	}
	return errs
}

func readDockerfile(t *testing.T, path string) []dfStage {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := parseDockerfile(string(b))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return st
}

func goModVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := goDirective.FindSubmatch(b)
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	return string(m[1])
}

func TestDockerfile(t *testing.T) {
	for _, err := range checkDockerfile(readDockerfile(t, filepath.Join(repoRoot(t), "Dockerfile")), goModVersion(t)) {
		t.Error(err)
	}
}

// Each check fails on a Dockerfile broken the way it guards against.
func TestDockerfileChecksCatchBrokenFiles(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	good := string(b)
	finalFrom := "FROM gcr.io/distroless/static-debian12:nonroot"
	cases := []struct {
		name  string
		edits [][2]string // old, new: each must apply
		want  string      // in the errors; "" for a variant that is still fine
	}{
		{"one stage", [][2]string{{finalFrom + "\n", ""}}, "FROM stage"},
		{"no USER", [][2]string{{"USER 65532:65532\n", ""}}, "no USER"},
		{"root", [][2]string{{"USER 65532:65532", "USER 0:0"}}, "root"},
		{"root group", [][2]string{{"USER 65532:65532", "USER 65532:0"}}, "root"},
		{"named user", [][2]string{{"USER 65532:65532", "USER nonroot"}}, "numeric"},
		{"USER in the builder only", [][2]string{{"USER 65532:65532\n", ""}, {"WORKDIR /src\n", "WORKDIR /src\nUSER 65532:65532\n"}}, "no USER"},
		{"cgo on", [][2]string{{"CGO_ENABLED=0 GOOS", "CGO_ENABLED=1 GOOS"}}, "CGO_ENABLED"},
		{"cgo unset", [][2]string{{"CGO_ENABLED=0 GOOS", "GOOS"}}, "CGO_ENABLED"},
		{"cgo on by ENV", [][2]string{{"CGO_ENABLED=0 GOOS", "GOOS"}, {"WORKDIR /src\n", "WORKDIR /src\nENV CGO_ENABLED=1\n"}}, "CGO_ENABLED"},
		{"cgo off by ENV, on in the RUN", [][2]string{{"CGO_ENABLED=0 GOOS", "CGO_ENABLED=1 GOOS"}, {"WORKDIR /src\n", "WORKDIR /src\nENV CGO_ENABLED=0\n"}}, "CGO_ENABLED"},
		{"cgo off by ENV only", [][2]string{{"CGO_ENABLED=0 GOOS", "GOOS"}, {"WORKDIR /src\n", "WORKDIR /src\nENV CGO_ENABLED=0\n"}}, ""},
		{"old Go", [][2]string{{"golang:1.26-bookworm", "golang:1.25-bookworm"}}, "go.mod's Go"},
		{"shell-form ENTRYPOINT", [][2]string{{`ENTRYPOINT ["/kcltool"]`, "ENTRYPOINT /kcltool"}}, "exec form"},
		{"RUN in the final stage", [][2]string{{"USER 65532:65532\n", "USER 65532:65532\nRUN chmod 0755 /kcltool\n"}}, "needs a shell"},
		{"binary not copied", [][2]string{{"COPY --from=build /out/kcltool /kcltool", "COPY --from=build /out/other /kcltool"}}, "does not COPY"},
		{"no version stamp", [][2]string{{"-X github.com/kcltool/kcltool/internal/buildinfo.version=${VERSION} ", ""}}, "buildinfo.version"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			broken := good
			for _, e := range c.edits {
				next := strings.Replace(broken, e[0], e[1], 1)
				if next == broken {
					t.Fatalf("the Dockerfile no longer contains %q: update the case", e[0])
				}
				broken = next
			}
			st, err := parseDockerfile(broken)
			if err != nil {
				t.Fatal(err)
			}
			errs := checkDockerfile(st, goModVersion(t))
			if c.want == "" {
				for _, err := range errs {
					t.Errorf("a fine variant rejected: %v", err)
				}
				return
			}
			if !strings.Contains(fmt.Sprint(errs), c.want) {
				t.Errorf("want an error naming %q, got %v", c.want, errs)
			}
		})
	}
}

// interpreter is the binary's PT_INTERP (its dynamic loader), "" when it
// has none: a static binary.
func interpreter(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err != nil {
				return "", err
			}
			return strings.TrimRight(string(b), "\x00"), nil
		}
	}
	return "", nil
}

// The binary the Dockerfile's build line makes is static, so it runs on
// distroless/static and in any handler's image, and carries the version.
func TestImageBinaryIsStatic(t *testing.T) {
	bin := builtBinary(t)
	interp, err := interpreter(bin)
	if err != nil {
		t.Fatal(err)
	}
	if interp != "" {
		t.Errorf("%s is dynamically linked: PT_INTERP %s", bin, interp)
	}
	out := kcltool(t, nil, "--version")
	if !strings.Contains(out, testVersion) || !strings.Contains(out, testCommit[:12]) {
		t.Errorf("--version = %q: want the build args' version %s and commit %s", out, testVersion, testCommit[:12])
	}
	// The check itself: the system's dynamically linked programs have one.
	for _, sys := range []string{"/bin/ls", "/usr/bin/env", "/bin/sh"} {
		if interp, err := interpreter(sys); err == nil && interp != "" {
			return
		}
	}
	t.Log("no dynamically linked system binary found to show the PT_INTERP check failing")
}

// The handler image's Dockerfile copies the binary from where the kcltool
// image puts it, and runs as a non-root user.
func TestHandlerImageDockerfile(t *testing.T) {
	stages := readDockerfile(t, filepath.Join(repoRoot(t), "Dockerfile"))
	var binPath string
	for _, in := range stages[len(stages)-1].instrs {
		if in.cmd == "ENTRYPOINT" {
			var argv []string
			_ = json.Unmarshal([]byte(in.args), &argv)
			if len(argv) > 0 {
				binPath = argv[0]
			}
		}
	}
	h := readDockerfile(t, filepath.Join(repoRoot(t), "deploy", "handler-image", "Dockerfile"))
	if len(h) < 2 {
		t.Fatalf("%d stages: want the kcltool image as a stage to copy from", len(h))
	}
	final := h[len(h)-1]
	var copied, user string
	var entry []string
	for _, in := range final.instrs {
		switch in.cmd {
		case "COPY":
			if from := in.flag("from"); from != "" {
				src := strings.Fields(in.args)
				if len(src) != 2 || src[0] != binPath {
					t.Errorf("line %d: COPY --from=%s %s: the kcltool image's binary is %s", in.line, from, in.args, binPath)
					continue
				}
				copied = src[1]
			}
		case "USER":
			user = in.args
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(in.args), &entry); err != nil {
				t.Errorf("line %d: ENTRYPOINT %s: want the exec form, so that SIGTERM reaches the init and kcltool, not a shell", in.line, in.args)
			}
		}
	}
	if copied == "" {
		t.Error("the handler image copies no kcltool binary")
	}
	if m := numericUser.FindStringSubmatch(user); m == nil || m[1] == "0" {
		t.Errorf("USER %q: want a numeric non-root user", user)
	}
	if !strings.Contains(strings.Join(entry, " "), copied) {
		t.Errorf("ENTRYPOINT %v does not run %s", entry, copied)
	}
}
