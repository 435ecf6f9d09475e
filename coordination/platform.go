package coordination

import (
	"net/http"
	"os"
	"path/filepath"

	"github.com/kcltool/kcltool/internal/clock"
)

// Platform is what the cmd layer found of where this worker runs, read as
// the KCL's ResourceMetadataProviders read it (worker/platform): this
// package reads no environment, so the caller fills it in.
type Platform struct {
	// Linux: runtime.GOOS is "linux" (OperatingRangeDataProvider.isLinux).
	Linux bool
	// ECSMetadataV3 and ECSMetadataV4 are ECS_CONTAINER_METADATA_URI and
	// ECS_CONTAINER_METADATA_URI_V4 (EcsResource).
	ECSMetadataV3, ECSMetadataV4 string
	// EKS: /var/run/secrets/kubernetes.io/serviceaccount/token exists
	// (EksResource).
	EKS bool
	// EC2: the instance identity document answered (Ec2Resource, IMDSv2).
	EC2 bool
	// CgroupRoot and ProcStat override where the samplers read, for tests;
	// empty means the KCL's paths.
	CgroupRoot, ProcStat string
}

// SelectCPUSampler is WorkerMetricsSelector.getDefaultWorkerMetrics: the
// first platform the worker is on, in the KCL's order ECS, EKS, EC2,
// decides the CPU sampler; nil (no metric: the leader balances on
// throughput) off all three, or when that platform's data is missing (ECS
// with only the v3 endpoint, EKS with no cgroup, a host with no /proc).
// The string names the choice for the start-up log.
func SelectCPUSampler(p Platform, clk clock.Clock, client *http.Client) (Sampler, string) {
	switch {
	case p.ECSMetadataV3 != "" || p.ECSMetadataV4 != "":
		if p.Linux && p.ECSMetadataV4 != "" {
			return NewEcsCPU(p.ECSMetadataV4, client), "ECS: CPU from the task metadata endpoint v4"
		}
		return nil, "ECS without the task metadata endpoint v4 on Linux: no worker metric, balanced on throughput"
	case p.EKS:
		if p.Linux {
			switch CgroupVersion(p.CgroupRoot) {
			case 2:
				return NewCgroupV2CPU(p.CgroupRoot, clk), "EKS: CPU from cgroup v2"
			case 1:
				return NewCgroupV1CPU(p.CgroupRoot, clk), "EKS: CPU from cgroup v1"
			}
		}
		return nil, "EKS without a cgroup CPU controller on Linux: no worker metric, balanced on throughput"
	case p.EC2:
		if p.Linux {
			procDir := "/proc"
			if p.ProcStat != "" {
				procDir = filepath.Dir(p.ProcStat)
			}
			if _, err := os.Stat(procDir); err == nil {
				return NewProcStatCPU(p.ProcStat), "EC2: CPU from /proc/stat"
			}
		}
		return nil, "EC2 without /proc on Linux: no worker metric, balanced on throughput"
	}
	return nil, "not on EC2, ECS or EKS: no worker metric, balanced on throughput (as the KCL)"
}
