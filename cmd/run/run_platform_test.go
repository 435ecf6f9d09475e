package run

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/clock"
)

// The platform, and with it the CPU metric, is found as the KCL's
// WorkerMetricsSelector finds it: ECS by its metadata variables, EKS by the
// service account token, then EC2 by the instance metadata service (IMDSv2
// token, then the identity document); none elsewhere.
func TestPlatformSamplers(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	cgroup := filepath.Join(dir, "cgroup")
	procStat := filepath.Join(dir, "proc", "stat")
	for _, p := range []string{token, filepath.Join(cgroup, "cgroup.controllers"), procStat} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var gotToken string
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPut && r.URL.Path == "/latest/api/token" && r.Header.Get("X-aws-ec2-metadata-token-ttl-seconds") == "600":
			_, _ = w.Write([]byte("tok"))
		case r.Method == http.MethodGet && r.URL.Path == "/latest/dynamic/instance-identity/document":
			gotToken = r.Header.Get("X-aws-ec2-metadata-token")
			_, _ = w.Write([]byte(`{"instanceId":"i-1"}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer imds.Close()
	noIMDS := httptest.NewServer(http.NotFoundHandler())
	defer noIMDS.Close()

	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	base := platform{k8sToken: filepath.Join(dir, "none"), cgroupRoot: cgroup, procStat: procStat, imds: noIMDS.URL,
		client: http.DefaultClient, clock: clock.RealClock(), goos: "linux", getenv: env()}
	for _, tc := range []struct {
		name     string
		edit     func(p *platform)
		platform string
		sampler  any
	}{
		{"nowhere", func(*platform) {}, "not on EC2, ECS or EKS", nil},
		{"ECS v4", func(p *platform) { p.getenv = env("ECS_CONTAINER_METADATA_URI_V4", "http://169.254.170.2/v4/x") }, "ECS", &coordination.EcsCPU{}},
		{"ECS v3 only", func(p *platform) { p.getenv = env("ECS_CONTAINER_METADATA_URI", "http://169.254.170.2/v3/x") }, "ECS", nil},
		{"EKS cgroup v2", func(p *platform) { p.k8sToken = token }, "EKS", &coordination.CgroupCPU{}},
		{"EC2", func(p *platform) { p.imds = imds.URL }, "EC2", &coordination.ProcStatCPU{}},
		{"EC2 not Linux", func(p *platform) { p.imds, p.goos = imds.URL, "darwin" }, "EC2", nil},
		{"ECS before EC2", func(p *platform) {
			p.imds, p.getenv = imds.URL, env("ECS_CONTAINER_METADATA_URI_V4", "http://169.254.170.2/v4/x")
		}, "ECS", &coordination.EcsCPU{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := base
			tc.edit(&p)
			got, name := p.samplers(context.Background())
			if !strings.HasPrefix(name, tc.platform) {
				t.Errorf("platform %q, want %q", name, tc.platform)
			}
			switch {
			case tc.sampler == nil && len(got) != 0:
				t.Errorf("samplers %T, want none", got)
			case tc.sampler != nil && (len(got) != 1 || typeName(got[0]) != typeName(tc.sampler)):
				t.Errorf("samplers %T, want one %T", got, tc.sampler)
			}
		})
	}
	if gotToken != "tok" {
		t.Errorf("the identity document was asked with token %q, want the IMDSv2 token", gotToken)
	}
}

func typeName(v any) string { return fmt.Sprintf("%T", v) }
