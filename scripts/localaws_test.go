// Package scripts holds the tests of the shell scripts beside them.
package scripts

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// localAWS runs scripts/localaws.sh with the three ports and a state
// folder of the test's own, so that it never stops a developer's servers
// (their pid files are in .emulators) nor uses their ports.
type localAWS struct {
	t                    *testing.T
	ddb, kin, kinTLS, s3 int
	state                string
}

func newLocalAWS(t *testing.T) *localAWS {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is not installed; scripts/localaws.sh needs it (Node.js 20 or newer)")
	}
	ports := freePorts(t, 4)
	l := &localAWS{t: t, ddb: ports[0], kin: ports[1], kinTLS: ports[2], s3: ports[3], state: t.TempDir()}
	// Whatever happens, nothing the test started is left running.
	t.Cleanup(func() { l.run("down") })
	return l
}

// freePorts are ports nothing listens on now, never the default ones
// (18000-18003), which a developer's `make up` may hold.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for len(ports) < n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, ln)
		if p := ln.Addr().(*net.TCPAddr).Port; p < 18000 || p > 18003 {
			ports = append(ports, p)
		}
	}
	for _, ln := range ls {
		ln.Close()
	}
	return ports
}

func (l *localAWS) run(args ...string) (string, string, int) {
	l.t.Helper()
	cmd := exec.Command("bash", append([]string{"localaws.sh"}, args...)...)
	cmd.Env = append(os.Environ(),
		fmt.Sprintf("KCLTOOL_LOCAL_DYNAMODB_PORT=%d", l.ddb),
		fmt.Sprintf("KCLTOOL_LOCAL_KINESIS_PORT=%d", l.kin),
		fmt.Sprintf("KCLTOOL_LOCAL_KINESIS_TLS_PORT=%d", l.kinTLS),
		fmt.Sprintf("KCLTOOL_LOCAL_S3_PORT=%d", l.s3),
		"KCLTOOL_LOCAL_STATE_DIR="+l.state)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		l.t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

func answers(port int) bool {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// pidFiles are the servers `up` left running, by their pid files.
func (l *localAWS) pidFiles() []string {
	l.t.Helper()
	m, err := filepath.Glob(filepath.Join(l.state, "*.pid"))
	if err != nil {
		l.t.Fatal(err)
	}
	return m
}

// TestLocalAWSUpRefusesATakenPort: when another process listens on one of
// the ports, `up` starts nothing and exits 1, naming the port and the
// variable that moves it; before, it started the servers anyway and the
// demo talked to whatever answered there.
func TestLocalAWSUpRefusesATakenPort(t *testing.T) {
	for _, c := range []struct {
		name, what, variable string
		port                 func(*localAWS) int
	}{
		{"dynamodb", "DynamoDB", "KCLTOOL_LOCAL_DYNAMODB_PORT", func(l *localAWS) int { return l.ddb }},
		{"kinesis", "Kinesis", "KCLTOOL_LOCAL_KINESIS_PORT", func(l *localAWS) int { return l.kin }},
		{"kinesis-tls", "Kinesis TLS", "KCLTOOL_LOCAL_KINESIS_TLS_PORT", func(l *localAWS) int { return l.kinTLS }},
		{"s3", "S3", "KCLTOOL_LOCAL_S3_PORT", func(l *localAWS) int { return l.s3 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := newLocalAWS(t)
			taken := c.port(l)
			ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", taken))
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()

			_, errOut, code := l.run("up")
			if code != 1 {
				t.Errorf("exit %d, want 1:\n%s", code, errOut)
			}
			want := fmt.Sprintf("localaws: port %d (%s) is already in use by another process", taken, c.what)
			if !strings.Contains(errOut, want) || !strings.Contains(errOut, c.variable+"=<free port>") {
				t.Errorf("stderr lacks %q and %s:\n%s", want, c.variable, errOut)
			}
			if strings.Count(errOut, "already in use") != 1 {
				t.Errorf("only port %d is taken:\n%s", taken, errOut)
			}
			if p := l.pidFiles(); len(p) != 0 {
				t.Errorf("servers left running: %v", p)
			}
			for _, p := range []int{l.ddb, l.kin, l.kinTLS} {
				if p != taken && answers(p) {
					t.Errorf("something answers on port %d after the refusal", p)
				}
			}
		})
	}
}

// TestLocalAWSUpMovedPorts: on ports moved by the variables, `up` starts
// both servers, `up` again restarts them (its own servers are not another
// process), `env` points at them, and `down` stops them.
func TestLocalAWSUpMovedPorts(t *testing.T) {
	l := newLocalAWS(t)
	for i := range 2 {
		if _, errOut, code := l.run("up"); code != 0 {
			t.Fatalf("up #%d: exit %d:\n%s", i+1, code, errOut)
		}
	}
	if len(l.pidFiles()) != 3 || !answers(l.ddb) || !answers(l.kin) || !answers(l.s3) {
		t.Fatalf("after up: pid files %v, DynamoDB answers %v, Kinesis answers %v, S3 answers %v", l.pidFiles(), answers(l.ddb), answers(l.kin), answers(l.s3))
	}
	out, _, code := l.run("env")
	for _, w := range []string{
		fmt.Sprintf("AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:%d", l.ddb),
		fmt.Sprintf("AWS_ENDPOINT_URL_KINESIS=http://127.0.0.1:%d", l.kin),
		fmt.Sprintf("AWS_ENDPOINT_URL_S3=http://127.0.0.1:%d", l.s3),
		// The AWS CLI v1 reads only AWS_DEFAULT_REGION.
		"AWS_REGION=us-east-1", "AWS_DEFAULT_REGION=us-east-1",
	} {
		if code != 0 || !strings.Contains(out, w) {
			t.Errorf("env: exit %d, lacks %s:\n%s", code, w, out)
		}
	}
	if _, errOut, code := l.run("down"); code != 0 {
		t.Fatalf("down: exit %d:\n%s", code, errOut)
	}
	if len(l.pidFiles()) != 0 || answers(l.ddb) || answers(l.kin) || answers(l.s3) {
		t.Errorf("after down: pid files %v, DynamoDB answers %v, Kinesis answers %v, S3 answers %v", l.pidFiles(), answers(l.ddb), answers(l.kin), answers(l.s3))
	}
}
