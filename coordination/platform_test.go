package coordination

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcltool/kcltool/internal/testenv/clocktest"
)

func TestSelectCPUSampler(t *testing.T) {
	v2 := filepath.Join("testdata", "cgroupv2", "unlimited")
	v1 := filepath.Join("testdata", "cgroupv1", "limited")
	stat := filepath.Join("testdata", "procstat", "1")
	cases := []struct {
		name string
		p    Platform
		want string // the sampler's type, "" for none
	}{
		{"nowhere", Platform{Linux: true}, ""},
		{"ECS v4", Platform{Linux: true, ECSMetadataV4: "http://169.254.170.2/v4/x"}, "*coordination.EcsCPU"},
		{"ECS v3 only", Platform{Linux: true, ECSMetadataV3: "http://169.254.170.2/v3/x"}, ""},
		// ECS comes first, as in WorkerMetricsSelector.create.
		{"ECS on EC2", Platform{Linux: true, ECSMetadataV4: "http://x", EC2: true, ProcStat: stat}, "*coordination.EcsCPU"},
		{"EKS cgroup v2", Platform{Linux: true, EKS: true, CgroupRoot: v2}, "v2"},
		{"EKS cgroup v1", Platform{Linux: true, EKS: true, CgroupRoot: v1}, "v1"},
		{"EKS no cgroup", Platform{Linux: true, EKS: true, CgroupRoot: t.TempDir()}, ""},
		// EKS before EC2: an EKS node is an EC2 instance too.
		{"EKS on EC2", Platform{Linux: true, EKS: true, EC2: true, CgroupRoot: v2, ProcStat: stat}, "v2"},
		{"EC2", Platform{Linux: true, EC2: true, ProcStat: stat}, "*coordination.ProcStatCPU"},
		{"EC2 not Linux", Platform{EC2: true, ProcStat: stat}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, why := SelectCPUSampler(c.p, clocktest.New(t0), nil)
			got := ""
			switch v := s.(type) {
			case nil:
			case *CgroupCPU:
				got = map[bool]string{true: "v2", false: "v1"}[v.v2]
			default:
				got = strings.TrimSpace(typeName(s))
			}
			if got != c.want || why == "" {
				t.Fatalf("SelectCPUSampler = %q (%s), want %q", got, why, c.want)
			}
		})
	}
}

func typeName(v any) string { return fmt.Sprintf("%T", v) }
