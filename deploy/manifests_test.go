package deploy

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// example is what the checks need from one deployment example, read from
// its manifest: kcltool's command line and environment, the probes the
// orchestrator sends, and the time it allows a stop before SIGKILL.
type example struct {
	name   string
	args   []string // kcltool's arguments, "run" first
	env    []string // NAME=VALUE, as the orchestrator sets them
	probes []probe
	// stop is the orchestrator's time between SIGTERM and SIGKILL, and
	// stopField the setting that gives it.
	stop      time.Duration
	stopField string
	// account is the AWS account of the role the example runs as ("" when
	// the manifest names none).
	account string
}

type probe struct {
	kind, path string
	port       int
}

func loadKubernetes(t *testing.T) (example, map[string]any, map[string]any) {
	t.Helper()
	dir := filepath.Join(repoRoot(t), "deploy", "kubernetes")
	var dep, sa map[string]any
	for _, f := range []string{"deployment.yaml", "serviceaccount.yaml"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		docs, err := parseYAML(string(b))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, d := range docs {
			m, _ := d.(map[string]any)
			switch m["kind"] {
			case "Deployment":
				dep = m
			case "ServiceAccount":
				sa = m
			}
		}
	}
	if dep == nil || sa == nil {
		t.Fatal("deploy/kubernetes: want a Deployment and a ServiceAccount")
	}
	ex := example{name: "kubernetes", stopField: "terminationGracePeriodSeconds"}
	must := func(v any, err error) any {
		t.Helper()
		if err != nil {
			t.Fatalf("deployment.yaml: %v", err)
		}
		return v
	}
	pod := must(yamlPath(dep, "spec", "template", "spec"))
	containers := must(yamlPath(pod, "containers")).([]any)
	if len(containers) != 1 {
		t.Fatalf("deployment.yaml: %d containers: the checks expect one", len(containers))
	}
	c := containers[0]
	for _, a := range must(yamlPath(c, "args")).([]any) {
		ex.args = append(ex.args, a.(string))
	}
	for _, e := range must(yamlPath(c, "env")).([]any) {
		name, _ := yamlPath(e, "name")
		value, err := yamlPath(e, "value")
		if err != nil {
			t.Fatalf("deployment.yaml: env %v: only plain values are understood here", name)
		}
		ex.env = append(ex.env, fmt.Sprintf("%s=%s", name, value))
	}
	ports := map[string]int{}
	for _, p := range must(yamlPath(c, "ports")).([]any) {
		n, err := strconv.Atoi(fmt.Sprint(must(yamlPath(p, "containerPort"))))
		if err != nil {
			t.Fatalf("deployment.yaml: containerPort: %v", err)
		}
		name, _ := yamlPath(p, "name")
		ports[fmt.Sprint(name)] = n
	}
	for _, kind := range []string{"livenessProbe", "readinessProbe", "startupProbe"} {
		if _, err := yamlPath(c, kind); err != nil {
			continue
		}
		path := must(yamlPath(c, kind, "httpGet", "path")).(string)
		portName := must(yamlPath(c, kind, "httpGet", "port")).(string)
		port, ok := ports[portName]
		if !ok {
			if port, _ = strconv.Atoi(portName); port == 0 {
				t.Fatalf("deployment.yaml: %s port %s: no such container port", kind, portName)
			}
		}
		ex.probes = append(ex.probes, probe{kind: kind, path: path, port: port})
	}
	secs, err := strconv.Atoi(fmt.Sprint(must(yamlPath(pod, "terminationGracePeriodSeconds"))))
	if err != nil {
		t.Fatalf("deployment.yaml: terminationGracePeriodSeconds: %v", err)
	}
	ex.stop = time.Duration(secs) * time.Second
	arn, _ := yamlPath(sa, "metadata", "annotations", "eks.amazonaws.com/role-arn")
	ex.account = arnAccount(fmt.Sprint(arn))
	return ex, dep, sa
}

var roleARN = regexp.MustCompile(`^arn:aws:iam::(\d{12}):role/\S+$`)

func arnAccount(arn string) string {
	if m := roleARN.FindStringSubmatch(arn); m != nil {
		return m[1]
	}
	return ""
}

type ecsTask struct {
	TaskRoleArn          string `json:"taskRoleArn"`
	ContainerDefinitions []struct {
		Name        string   `json:"name"`
		Command     []string `json:"command"`
		EntryPoint  []string `json:"entryPoint"`
		Environment []struct {
			Name, Value string
		} `json:"environment"`
		PortMappings []struct {
			ContainerPort int `json:"containerPort"`
		} `json:"portMappings"`
		HealthCheck *struct {
			Command []string `json:"command"`
		} `json:"healthCheck"`
		StopTimeout            int    `json:"stopTimeout"`
		User                   string `json:"user"`
		ReadonlyRootFilesystem bool   `json:"readonlyRootFilesystem"`
	} `json:"containerDefinitions"`
}

var healthURL = regexp.MustCompile(`http://(?:127\.0\.0\.1|localhost):(\d+)(/[A-Za-z0-9/_-]*)`)

// ecsMaxStopTimeout is ECS's limit on a container's stopTimeout.
const ecsMaxStopTimeout = 120

func loadECS(t *testing.T) (example, ecsTask) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "ecs", "task-definition.json"))
	if err != nil {
		t.Fatal(err)
	}
	var task ecsTask
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(&task); err != nil {
		t.Fatalf("task-definition.json: %v", err)
	}
	if len(task.ContainerDefinitions) != 1 {
		t.Fatalf("task-definition.json: %d containers: the checks expect one", len(task.ContainerDefinitions))
	}
	c := task.ContainerDefinitions[0]
	ex := example{name: "ecs", args: c.Command, stop: time.Duration(c.StopTimeout) * time.Second, stopField: "stopTimeout", account: arnAccount(task.TaskRoleArn)}
	for _, e := range c.Environment {
		ex.env = append(ex.env, e.Name+"="+e.Value)
	}
	if c.HealthCheck != nil {
		// The command runs in the container (the handler's image, which
		// has python3): the URL it fetches is the probe.
		m := healthURL.FindStringSubmatch(strings.Join(c.HealthCheck.Command, " "))
		if m == nil {
			t.Fatalf("task-definition.json: the healthCheck command %q fetches no http://127.0.0.1:PORT/PATH", c.HealthCheck.Command)
		}
		port, _ := strconv.Atoi(m[1])
		ex.probes = append(ex.probes, probe{kind: "healthCheck", path: m[2], port: port})
	}
	return ex, task
}

// systemdUnit is a unit file's settings by section and key; a key may
// repeat.
type systemdUnit map[string]map[string][]string

func (u systemdUnit) get(section, key string) string {
	v := u[section][key]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

func parseUnit(src string) (systemdUnit, error) {
	u := systemdUnit{}
	section := ""
	for i, l := range strings.Split(src, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, ";"):
		case strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]"):
			section = l[1 : len(l)-1]
			u[section] = map[string][]string{}
		case strings.HasSuffix(l, "\\"):
			return nil, fmt.Errorf("line %d: continuation lines are not used here", i+1)
		default:
			k, v, ok := strings.Cut(l, "=")
			if !ok || section == "" {
				return nil, fmt.Errorf("line %d: %q", i+1, l)
			}
			u[section][strings.TrimSpace(k)] = append(u[section][strings.TrimSpace(k)], strings.TrimSpace(v))
		}
	}
	return u, nil
}

// The unit's EnvironmentFile and the example file installed there.
const (
	unitEnvFile    = "/etc/kcltool/orders.env"
	exampleEnvFile = "kcltool-orders.env"
)

func loadSystemd(t *testing.T) (example, systemdUnit) {
	t.Helper()
	dir := filepath.Join(repoRoot(t), "deploy", "systemd")
	b, err := os.ReadFile(filepath.Join(dir, "kcltool-orders.service"))
	if err != nil {
		t.Fatal(err)
	}
	u, err := parseUnit(string(b))
	if err != nil {
		t.Fatalf("kcltool-orders.service: %v", err)
	}
	ex := example{name: "systemd", stopField: "TimeoutStopSec"}
	exec := u.get("Service", "ExecStart")
	if strings.ContainsAny(exec, `"'%$\`) {
		t.Fatalf("ExecStart=%s: quotes, specifiers and variables are not understood here", exec)
	}
	argv := strings.Fields(exec)
	if len(argv) < 2 || filepath.Base(argv[0]) != "kcltool" {
		t.Fatalf("ExecStart=%s: want kcltool run ...", exec)
	}
	ex.args = argv[1:]
	if f := u.get("Service", "EnvironmentFile"); f != unitEnvFile {
		t.Fatalf("EnvironmentFile=%s: the example env file %s is installed as %s", f, exampleEnvFile, unitEnvFile)
	}
	env, err := os.ReadFile(filepath.Join(dir, exampleEnvFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(env), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if !strings.Contains(l, "=") || strings.ContainsAny(l, `"'$`) {
			t.Fatalf("%s: %q: want NAME=value, unquoted", exampleEnvFile, l)
		}
		ex.env = append(ex.env, l)
	}
	if ex.stop, err = time.ParseDuration(u.get("Service", "TimeoutStopSec") + "s"); err != nil {
		if ex.stop, err = time.ParseDuration(u.get("Service", "TimeoutStopSec")); err != nil {
			t.Fatalf("TimeoutStopSec=%s: %v", u.get("Service", "TimeoutStopSec"), err)
		}
	}
	return ex, u
}

func loadExamples(t *testing.T) []example {
	k, _, _ := loadKubernetes(t)
	e, _ := loadECS(t)
	s, _ := loadSystemd(t)
	return []example{k, e, s}
}

// stopMargin is how long a graceful stop may last beyond --shutdown-grace,
// read from the code that bounds it: when the grace ends the handlers
// still running are killed and reaped, each within pipeGrace
// (runner/processor/handler.go: Wait keeps reading their output that long),
// then releasing the leases, the KCL 3.x metrics item and the leader lock
// and the last CloudWatch metrics take at most releaseTimeout
// (runner/worker.go, stopGracefully). Read from the source, so that raising
// either constant fails this test until the examples allow for it.
func stopMargin(t *testing.T) time.Duration {
	t.Helper()
	root := repoRoot(t)
	return constDuration(t, filepath.Join(root, "runner", "worker.go"), "releaseTimeout") +
		constDuration(t, filepath.Join(root, "runner", "processor", "handler.go"), "pipeGrace")
}

// constDuration evaluates the constant name of a Go file, written as
// time.Second, N * time.Second or N * time.Millisecond.
func constDuration(t *testing.T, file, name string) time.Duration {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	units := map[string]time.Duration{"Millisecond": time.Millisecond, "Second": time.Second, "Minute": time.Minute}
	var eval func(ast.Expr) (time.Duration, bool)
	eval = func(e ast.Expr) (time.Duration, bool) {
		switch e := e.(type) {
		case *ast.BasicLit:
			n, err := strconv.Atoi(e.Value)
			return time.Duration(n), err == nil
		case *ast.SelectorExpr:
			if x, ok := e.X.(*ast.Ident); ok && x.Name == "time" {
				u, ok := units[e.Sel.Name]
				return u, ok
			}
		case *ast.BinaryExpr:
			a, ok1 := eval(e.X)
			b, ok2 := eval(e.Y)
			if e.Op == token.MUL && ok1 && ok2 {
				return a * b, true
			}
		case *ast.ParenExpr:
			return eval(e.X)
		}
		return 0, false
	}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if n.Name == name && i < len(vs.Values) {
					if d, ok := eval(vs.Values[i]); ok {
						return d
					}
					t.Fatalf("%s: const %s: not a simple duration", file, name)
				}
			}
		}
	}
	t.Fatalf("%s: no const %s", file, name)
	return 0
}

var envOfFlag = regexp.MustCompile(`\[\$(KCLTOOL_[A-Z0-9_]+)\]`)

// runEnvNames are the KCLTOOL_* variables `kcltool run` reads, as its help
// names them next to each flag (its own and the global ones).
func runEnvNames(t *testing.T) []string {
	t.Helper()
	var names []string
	for _, m := range envOfFlag.FindAllStringSubmatch(kcltool(t, nil, "run", "--help"), -1) {
		names = append(names, m[1])
	}
	if len(names) < 20 {
		t.Fatalf("kcltool run --help names only %d KCLTOOL_* variables", len(names))
	}
	return names
}

// offlineEnv makes kcltool's AWS calls fail at once, without credentials
// or instance metadata: --print-config then prints the mode as unknown.
var offlineEnv = []string{"AWS_ACCESS_KEY_ID=x", "AWS_SECRET_ACCESS_KEY=x", "AWS_EC2_METADATA_DISABLED=true",
	"AWS_CONFIG_FILE=" + os.DevNull, "AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull, "KCLTOOL_ENDPOINT_URL=http://127.0.0.1:1"}

// resolved is run --print-config's answer for the example's command line
// and environment: each setting's value. Its failure is the error.
func resolved(t *testing.T, ex example) (map[string]string, error) {
	t.Helper()
	args := append(slices.Clone(ex.args), "--print-config", "-o", "json")
	// The handler after "--" stays: --print-config parses it too.
	if i := slices.Index(args, "--"); i >= 0 {
		args = append(append(slices.Clone(ex.args[:i]), "--print-config", "-o", "json"), ex.args[i:]...)
	}
	out, errOut, err := kcltoolRun(t, append(slices.Clone(ex.env), offlineEnv...), args...)
	if err != nil {
		return nil, fmt.Errorf("kcltool %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut))
	}
	var pc struct {
		Settings []struct{ Setting, Value, Source string }
	}
	if err := json.Unmarshal([]byte(out), &pc); err != nil {
		return nil, fmt.Errorf("--print-config -o json: %v", err)
	}
	m := map[string]string{}
	for _, s := range pc.Settings {
		m[s.Setting] = s.Value
	}
	return m, nil
}

// checkExample lists what is wrong with an example: a flag or variable
// run does not have (or a value it refuses), a stop the orchestrator cuts
// short, probes on another port than --metrics-addr.
func checkExample(t *testing.T, ex example, envNames []string, margin time.Duration) []error {
	t.Helper()
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(ex.name+": "+format, a...)) }
	if len(ex.args) == 0 || ex.args[0] != "run" {
		bad("the command is %q: want kcltool run", ex.args)
		return errs
	}
	// kcltool ignores a KCLTOOL_* variable it does not know: a misspelt
	// one would silently be no setting at all.
	for _, kv := range ex.env {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "KCLTOOL_") && !slices.Contains(envNames, name) {
			bad("%s: kcltool run has no such variable", name)
		}
	}
	settings, err := resolved(t, ex)
	if err != nil {
		bad("%v", err)
		return errs
	}
	grace, err := time.ParseDuration(settings["shutdown-grace"])
	if err != nil {
		bad("--print-config shutdown-grace %q: %v", settings["shutdown-grace"], err)
		return errs
	}
	if ex.stop <= grace+margin {
		bad("%s %s: want more than --shutdown-grace %s plus the stop margin %s, or a stop past the grace is killed before the leases are released", ex.stopField, ex.stop, grace, margin)
	}
	if ex.name == "ecs" && ex.stop > ecsMaxStopTimeout*time.Second {
		bad("stopTimeout %s: ECS allows at most %ds", ex.stop, ecsMaxStopTimeout)
	}
	addr := settings["metrics-addr"]
	_, portText, err := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portText)
	if err != nil || port == 0 {
		if len(ex.probes) > 0 {
			bad("--metrics-addr %q: the probes need a fixed port", addr)
		}
		return errs
	}
	for _, p := range ex.probes {
		if p.port != port {
			bad("%s on port %d, but --metrics-addr is %s", p.kind, p.port, addr)
		}
	}
	return errs
}

func TestExamplesSettingsAndGrace(t *testing.T) {
	envNames, margin := runEnvNames(t), stopMargin(t)
	if margin < 10*time.Second {
		t.Fatalf("stop margin %s: releaseTimeout and pipeGrace are no longer where this test reads them", margin)
	}
	for _, ex := range loadExamples(t) {
		t.Run(ex.name, func(t *testing.T) {
			for _, err := range checkExample(t, ex, envNames, margin) {
				t.Error(err)
			}
		})
	}
}

// Each check of checkExample fails on an example broken the way it guards
// against.
func TestExampleChecksCatchBrokenExamples(t *testing.T) {
	envNames, margin := runEnvNames(t), stopMargin(t)
	k, _, _ := loadKubernetes(t)
	withEnv := func(ex example, kv ...string) example {
		ex.env = append(slices.Clone(ex.env), kv...)
		return ex
	}
	withoutEnv := func(ex example, name string) example {
		ex.env = slices.DeleteFunc(slices.Clone(ex.env), func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
		return ex
	}
	cases := []struct {
		name string
		ex   func(example) example
		want string
	}{
		{"grace period equal to grace plus margin", func(ex example) example { ex.stop = 30*time.Second + margin; return ex }, "terminationGracePeriodSeconds"},
		{"Kubernetes' default grace period", func(ex example) example { ex.stop = 30 * time.Second; return ex }, "terminationGracePeriodSeconds"},
		{"longer --shutdown-grace by variable", func(ex example) example { return withEnv(ex, "KCLTOOL_SHUTDOWN_GRACE=50s") }, "--shutdown-grace 50s"},
		{"longer --shutdown-grace by flag", func(ex example) example {
			ex.args = append([]string{"run", "--shutdown-grace", "55s"}, ex.args[1:]...)
			return ex
		}, "--shutdown-grace 55s"},
		{"default --shutdown-grace", func(ex example) example {
			ex = withoutEnv(ex, "KCLTOOL_SHUTDOWN_GRACE")
			ex.stop = 40 * time.Second
			return ex
		}, "--shutdown-grace 30s"},
		{"misspelt variable", func(ex example) example { return withEnv(ex, "KCLTOOL_SHUTDOWN_GRACE_PERIOD=20s") }, "no such variable"},
		{"unknown flag", func(ex example) example {
			ex.args = append([]string{"run", "--metrics-address", ":9090"}, ex.args[1:]...)
			return ex
		}, "unknown flag"},
		{"invalid value", func(ex example) example { return withEnv(ex, "KCLTOOL_MAX_PARALLEL=0") }, "max-parallel"},
		{"probe on another port", func(ex example) example {
			ex.probes = append(slices.Clone(ex.probes), probe{kind: "readinessProbe", path: "/readyz", port: 8080})
			return ex
		}, "port 8080"},
		{"metrics on another port", func(ex example) example {
			ex.args = slices.Clone(ex.args)
			ex.args[slices.Index(ex.args, ":9090")] = ":9091"
			return ex
		}, "--metrics-addr is :9091"},
		{"not run", func(ex example) example { ex.args = append([]string{"leases", "ls"}, ex.args[1:]...); return ex }, "want kcltool run"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs := checkExample(t, c.ex(k), envNames, margin)
			if !strings.Contains(fmt.Sprint(errs), c.want) {
				t.Errorf("want an error naming %q, got %v", c.want, errs)
			}
		})
	}
	e, _ := loadECS(t)
	e.stop = 121 * time.Second
	e = withEnv(e, "KCLTOOL_SHUTDOWN_GRACE=100s")
	if errs := checkExample(t, e, envNames, margin); !strings.Contains(fmt.Sprint(errs), "ECS allows at most") {
		t.Errorf("ECS stopTimeout 121: got %v", errs)
	}
}

// The settings each orchestrator has that kcltool cannot check itself.
func TestKubernetesPodSpec(t *testing.T) {
	_, dep, sa := loadKubernetes(t)
	for _, err := range checkPodSpec(dep, sa) {
		t.Error(err)
	}
}

func checkPodSpec(dep, sa map[string]any) []error {
	var errs []error
	want := func(path []any, value string) {
		v, err := yamlPath(dep, path...)
		if err != nil || fmt.Sprint(v) != value {
			errs = append(errs, fmt.Errorf("deployment.yaml %v = %v: want %s", path, v, value))
		}
	}
	pod := []any{"spec", "template", "spec"}
	c := append(slices.Clone(pod), "containers", 0)
	want(append(slices.Clone(pod), "securityContext", "runAsNonRoot"), "true")
	want(append(slices.Clone(c), "securityContext", "readOnlyRootFilesystem"), "true")
	want(append(slices.Clone(c), "securityContext", "allowPrivilegeEscalation"), "false")
	if uid, _ := yamlPath(dep, append(slices.Clone(pod), "securityContext", "runAsUser")...); fmt.Sprint(uid) == "0" {
		errs = append(errs, fmt.Errorf("deployment.yaml runAsUser 0: root"))
	}
	for _, r := range []string{"cpu", "memory"} {
		if _, err := yamlPath(dep, append(slices.Clone(c), "resources", "requests", r)...); err != nil {
			errs = append(errs, fmt.Errorf("deployment.yaml: no resources.requests.%s", r))
		}
	}
	if _, err := yamlPath(dep, append(slices.Clone(c), "resources", "limits", "memory")...); err != nil {
		errs = append(errs, fmt.Errorf("deployment.yaml: no resources.limits.memory"))
	}
	// A preStop hook delays SIGTERM within the same grace period, and the
	// image has no shell to run one.
	if _, err := yamlPath(dep, append(slices.Clone(c), "lifecycle", "preStop")...); err == nil {
		errs = append(errs, fmt.Errorf("deployment.yaml: a preStop hook: SIGTERM itself starts kcltool's graceful stop"))
	}
	name, _ := yamlPath(sa, "metadata", "name")
	want(append(slices.Clone(pod), "serviceAccountName"), fmt.Sprint(name))
	arn, _ := yamlPath(sa, "metadata", "annotations", "eks.amazonaws.com/role-arn")
	if arnAccount(fmt.Sprint(arn)) == "" {
		errs = append(errs, fmt.Errorf("serviceaccount.yaml: eks.amazonaws.com/role-arn %v: want arn:aws:iam::ACCOUNT:role/NAME", arn))
	}
	return errs
}

func TestECSTaskDefinition(t *testing.T) {
	_, task := loadECS(t)
	c := task.ContainerDefinitions[0]
	if c.HealthCheck == nil || len(c.HealthCheck.Command) < 2 || c.HealthCheck.Command[0] != "CMD" {
		t.Errorf("healthCheck %v: want [\"CMD\", ...]: the exec form, run without a shell", c.HealthCheck)
	}
	if m := numericUser.FindStringSubmatch(c.User); m == nil || m[1] == "0" {
		t.Errorf("user %q: want a numeric non-root user", c.User)
	}
	if !c.ReadonlyRootFilesystem {
		t.Error("readonlyRootFilesystem: want true")
	}
	if c.StopTimeout == 0 {
		t.Error("no stopTimeout: ECS's default (30s) equals kcltool's default --shutdown-grace")
	}
}

func TestSystemdUnit(t *testing.T) {
	_, u := loadSystemd(t)
	for _, err := range checkUnit(u) {
		t.Error(err)
	}
	// Each check fails on a unit broken that way.
	for key, value := range map[string]string{"KillSignal": "SIGKILL", "KillMode": "control-group", "Restart": "no", "NoNewPrivileges": "no", "ProtectSystem": "no"} {
		broken := systemdUnit{"Service": map[string][]string{}}
		for k, v := range u["Service"] {
			broken["Service"][k] = v
		}
		broken["Service"][key] = []string{value}
		if errs := checkUnit(broken); !strings.Contains(fmt.Sprint(errs), key) {
			t.Errorf("%s=%s: want an error naming it, got %v", key, value, errs)
		}
	}
	broken := systemdUnit{"Service": map[string][]string{}}
	for k, v := range u["Service"] {
		broken["Service"][k] = v
	}
	delete(broken["Service"], "DynamicUser")
	if errs := checkUnit(broken); !strings.Contains(fmt.Sprint(errs), "DynamicUser") {
		t.Errorf("no DynamicUser nor User: got %v", errs)
	}
}

func checkUnit(u systemdUnit) []error {
	var errs []error
	want := func(key string, values ...string) {
		if v := u.get("Service", key); !slices.Contains(values, v) {
			errs = append(errs, fmt.Errorf("%s=%s: want %s", key, v, strings.Join(values, " or ")))
		}
	}
	want("KillSignal", "SIGTERM")
	// control-group (the default) sends SIGTERM to the handlers too, at
	// the moment kcltool starts letting them finish.
	want("KillMode", "mixed")
	want("Restart", "on-failure")
	want("NoNewPrivileges", "yes", "true")
	want("ProtectSystem", "strict", "full")
	if u.get("Service", "DynamicUser") != "yes" && (u.get("Service", "User") == "" || u.get("Service", "User") == "root") {
		errs = append(errs, fmt.Errorf("neither DynamicUser=yes nor a User= other than root"))
	}
	return errs
}

// The role's policy (IRSA's role, the ECS task role, the instance profile
// of the systemd host) is what `kcltool iam-policy run` prints for the
// examples' command line and settings: deploy/kubernetes/iam-policy.json.
// Regenerate it with the command in serviceaccount.yaml's comment.
func TestExamplesIAMPolicy(t *testing.T) {
	want, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "kubernetes", "iam-policy.json"))
	if err != nil {
		t.Fatal(err)
	}
	account := regexp.MustCompile(`arn:aws:dynamodb:[^:]+:(\d{12}):`).FindSubmatch(want)
	if account == nil {
		t.Fatal("iam-policy.json names no lease table ARN with an account")
	}
	for _, ex := range loadExamples(t) {
		t.Run(ex.name, func(t *testing.T) {
			if ex.account != "" && ex.account != string(account[1]) {
				t.Errorf("the role is in account %s, the policy's ARNs in %s", ex.account, account[1])
			}
			if got := examplePolicy(t, ex, string(account[1])); got != string(want) {
				t.Errorf("kcltool iam-policy %s differs from deploy/kubernetes/iam-policy.json:\n%s", strings.Join(ex.args, " "), got)
			}
		})
	}
	// The check fails on a policy for other settings.
	ex, _, _ := loadKubernetes(t)
	ex.env = append(slices.Clone(ex.env), "KCLTOOL_STREAM=payments")
	if examplePolicy(t, ex, string(account[1])) == string(want) {
		t.Error("a policy for another stream compares equal")
	}
}

func examplePolicy(t *testing.T, ex example, account string) string {
	t.Helper()
	args := append([]string{"iam-policy"}, ex.args...)
	if i := slices.Index(args, "--"); i >= 0 {
		args = slices.Insert(args, i, "--account", account)
	} else {
		args = append(args, "--account", account)
	}
	return kcltool(t, append(slices.Clone(ex.env), offlineEnv...), args...)
}
