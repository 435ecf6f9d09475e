package run

import (
	"context"
	"io"
	"net/http"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/clock"
)

// platform is where the worker runs, found as the KCL's WorkerMetricsSelector
// finds it (worker/platform: EcsResource, EksResource, Ec2Resource, in that
// order, EC2 last), and so which CPU metric it reports. Off EC2, ECS and EKS
// the KCL reports none and the leader balances the worker on throughput.
// The paths and URLs are fields so that tests can point them elsewhere.
type platform struct {
	getenv     func(string) string
	k8sToken   string // EksResource.K8S_TOKEN_PATH
	cgroupRoot string // "" for coordination.DefaultCgroupRoot
	procStat   string
	imds       string // the instance metadata service, Ec2Resource's host
	client     *http.Client
	clock      clock.Clock
	goos       string
}

func defaultPlatform(getenv func(string) string, clk clock.Clock) platform {
	return platform{
		getenv: getenv, k8sToken: "/var/run/secrets/kubernetes.io/serviceaccount/token",
		procStat: "/proc/stat", imds: "http://169.254.169.254",
		// EC2_INSTANCE_METADATA_TIMEOUT_MILLIS, connect and read.
		client: &http.Client{Timeout: 5 * time.Second}, clock: clk, goos: runtime.GOOS,
	}
}

// samplers reads the platform as the KCL's resources do and lets
// coordination.SelectCPUSampler choose (WorkerMetricsSelector). EC2 is
// asked only when the worker is neither on ECS nor on EKS, as the KCL
// checks it last: it costs an HTTP round trip, seconds off EC2.
func (p platform) samplers(ctx context.Context) ([]coordination.Sampler, string) {
	cp := coordination.Platform{
		Linux:         p.goos == "linux",
		ECSMetadataV3: p.getenv("ECS_CONTAINER_METADATA_URI"), ECSMetadataV4: p.getenv("ECS_CONTAINER_METADATA_URI_V4"),
		EKS:        exists(p.k8sToken),
		CgroupRoot: p.cgroupRoot, ProcStat: p.procStat,
	}
	if cp.ECSMetadataV3 == "" && cp.ECSMetadataV4 == "" && !cp.EKS {
		cp.EC2 = p.onEC2(ctx)
	}
	s, why := coordination.SelectCPUSampler(cp, p.clock, p.client)
	if s == nil {
		return nil, why
	}
	return []coordination.Sampler{s}, why
}

// onEC2 is Ec2Resource.isEc2: an IMDSv2 token (PUT, ttl 600 s; none is
// fine, IMDSv1), then the instance identity document answering 200.
func (p platform) onEC2(ctx context.Context) bool {
	token := ""
	if req, err := http.NewRequestWithContext(ctx, http.MethodPut, p.imds+"/latest/api/token", nil); err == nil {
		req.Header.Set("X-aws-ec2-metadata-token-ttl-seconds", "600")
		if resp, err := p.client.Do(req); err == nil {
			if resp.StatusCode == http.StatusOK {
				b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
				token = strings.TrimSpace(string(b))
			}
			resp.Body.Close()
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.imds+"/latest/dynamic/instance-identity/document", nil)
	if err != nil {
		return false
	}
	if token != "" {
		req.Header.Set("X-aws-ec2-metadata-token", token)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
