package coordination

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kcltool/kcltool/internal/clock"
)

// The CPU samplers of KCL 3.5.1's worker/metric/impl, one per platform the
// KCL measures (WorkerMetricsSelector): /proc/stat on EC2, cgroup v1 or v2
// on EKS. The cmd layer picks one from the environment, as the KCL's
// ResourceMetadataProviders do; this package reads no environment. Each
// reports "C" with the operating range [100]. The first capture of each
// is 0, as the KCL's: there is no previous reading to subtract.

const (
	cpuMetricName = "C" // WorkerMetricType.CPU short name
	cpuMaxUtil    = 100
)

// DefaultProcStat and DefaultCgroupRoot are where the KCL reads.
const (
	DefaultProcStat   = "/proc/stat"
	DefaultCgroupRoot = "/sys/fs/cgroup"
)

// ProcStatCPU is LinuxCpuWorkerMetric: the host's CPU utilisation in
// percent between two captures, from the first ("cpu") line of /proc/stat.
type ProcStatCPU struct {
	path string

	mu                                 sync.Mutex
	lastUsr, lastIow, lastIdl, lastTot int64
	lastLine                           string
}

// NewProcStatCPU reads path, DefaultProcStat when empty.
func NewProcStatCPU(path string) *ProcStatCPU {
	if path == "" {
		path = DefaultProcStat
	}
	return &ProcStatCPU{path: path}
}

func (*ProcStatCPU) Name() string          { return cpuMetricName }
func (*ProcStatCPU) MaxUtilization() int64 { return cpuMaxUtil }

// Sample follows LinuxCpuWorkerMetric.calculateCpuUsage: user+nice,
// system, idle and iowait make the total; utilisation is the share of
// the total's growth that is not idle. A first capture, an unchanged line,
// or a total that grew less than idle while iowait fell (the kernel lets
// iowait go down) reads 0.
func (p *ProcStatCPU) Sample() (float64, error) {
	line, err := firstLine(p.path)
	if err != nil {
		return 0, err
	}
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, fmt.Errorf("%s: first line %q is not the cpu line", p.path, line)
	}
	var v [5]int64
	for i := range v {
		if v[i], err = strconv.ParseInt(f[i+1], 10, 64); err != nil {
			return 0, fmt.Errorf("%s: %w", p.path, err)
		}
	}
	usr, sys, idl, iow := v[0]+v[1], v[2], v[3], v[4]
	tot := usr + sys + idl + iow

	p.mu.Lock()
	defer p.mu.Unlock()
	skip := p.lastUsr == 0 || line == p.lastLine
	diffIdl, diffTot := abs64(idl-p.lastIdl), abs64(tot-p.lastTot)
	if diffTot < diffIdl && iow < p.lastIow {
		skip = true
	}
	p.lastUsr, p.lastIdl, p.lastIow, p.lastTot, p.lastLine = usr, idl, iow, tot, line
	// diffTot == 0 with a changed line (only irq or steal moved): the KCL
	// divides by zero there; kcltool reads 0.
	if skip || diffTot == 0 {
		return 0, nil
	}
	return float64(diffTot-diffIdl) / float64(diffTot) * 100, nil
}

// CgroupCPU is Cgroupv1CpuWorkerMetric or Cgroupv2CpuWorkerMetric: the
// container's CPU time used between two captures over the wall time
// between them, as a percentage of its CPU limit (the CFS quota, or the
// number of CPUs of its effective cpuset when there is no quota), at most
// 100.
type CgroupCPU struct {
	v2   bool
	root string
	clk  clock.Clock

	mu       sync.Mutex
	limit    float64 // CPUs; 0 until read once
	lastUse  time.Duration
	lastWall time.Time
}

// NewCgroupV1CPU reads cpu/cpuacct.usage, cpu/cpu.cfs_quota_us,
// cpu/cpu.cfs_period_us and cpuset/cpuset.effective_cpus under root
// (DefaultCgroupRoot when empty).
func NewCgroupV1CPU(root string, clk clock.Clock) *CgroupCPU {
	return newCgroupCPU(false, root, clk)
}

// NewCgroupV2CPU reads cpu.stat, cpu.max and cpuset.cpus.effective under
// root (DefaultCgroupRoot when empty).
func NewCgroupV2CPU(root string, clk clock.Clock) *CgroupCPU {
	return newCgroupCPU(true, root, clk)
}

func newCgroupCPU(v2 bool, root string, clk clock.Clock) *CgroupCPU {
	if root == "" {
		root = DefaultCgroupRoot
	}
	return &CgroupCPU{v2: v2, root: root, clk: clk}
}

func (*CgroupCPU) Name() string          { return cpuMetricName }
func (*CgroupCPU) MaxUtilization() int64 { return cpuMaxUtil }

// Sample reads the CPU time used and compares it with the last capture.
func (c *CgroupCPU) Sample() (float64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.limit == 0 {
		limit, err := c.readLimit()
		if err != nil {
			return 0, err
		}
		c.limit = limit
	}
	used, err := c.readUsage()
	if err != nil {
		return 0, err
	}
	now := c.clk.Now()
	first := c.lastWall.IsZero()
	wall := now.Sub(c.lastWall)
	diff := used - c.lastUse
	c.lastUse, c.lastWall = used, now
	if first || wall <= 0 {
		return 0, nil
	}
	cores := float64(diff) / float64(wall)
	return min(100, cores/c.limit*100), nil
}

func (c *CgroupCPU) readUsage() (time.Duration, error) {
	if c.v2 {
		// cpu.stat's first line is "usage_usec <microseconds>".
		p := filepath.Join(c.root, "cpu.stat")
		line, err := firstLine(p)
		if err != nil {
			return 0, err
		}
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "usage_usec" {
			return 0, fmt.Errorf("%s: first line %q is not usage_usec", p, line)
		}
		us, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", p, err)
		}
		return time.Duration(us) * time.Microsecond, nil
	}
	ns, err := readInt(filepath.Join(c.root, "cpu", "cpuacct.usage"))
	return time.Duration(ns), err
}

// readLimit is calculateCpuLimit: quota / period, or the effective CPUs
// when the quota is unlimited (-1 in v1, "max" in v2).
func (c *CgroupCPU) readLimit() (float64, error) {
	var quota, period float64
	var cpusetFile string
	if c.v2 {
		p := filepath.Join(c.root, "cpu.max")
		line, err := firstLine(p)
		if err != nil {
			return 0, err
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return 0, fmt.Errorf("%s: %q is not \"<max> <period>\"", p, line)
		}
		if period, err = strconv.ParseFloat(f[1], 64); err != nil {
			return 0, fmt.Errorf("%s: %w", p, err)
		}
		quota = -1
		if f[0] != "max" {
			if quota, err = strconv.ParseFloat(f[0], 64); err != nil {
				return 0, fmt.Errorf("%s: %w", p, err)
			}
		}
		cpusetFile = filepath.Join(c.root, "cpuset.cpus.effective")
	} else {
		q, err := readInt(filepath.Join(c.root, "cpu", "cpu.cfs_quota_us"))
		if err != nil {
			return 0, err
		}
		pd, err := readInt(filepath.Join(c.root, "cpu", "cpu.cfs_period_us"))
		if err != nil {
			return 0, err
		}
		quota, period = float64(q), float64(pd)
		cpusetFile = filepath.Join(c.root, "cpuset", "cpuset.effective_cpus")
	}
	if quota < 0 {
		line, err := firstLine(cpusetFile)
		if err != nil {
			return 0, err
		}
		n, err := countCPUs(line)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", cpusetFile, err)
		}
		return float64(n), nil
	}
	if period <= 0 || quota == 0 {
		return 0, fmt.Errorf("cgroup CPU quota %v over period %v is no limit", quota, period)
	}
	return quota / period, nil
}

// countCPUs counts a cpuset list such as "0-3,6,8-9"
// (Cgroup.getAvailableCpusFromEffectiveCpuSet).
func countCPUs(set string) (int, error) {
	n := 0
	for _, part := range strings.Split(strings.TrimSpace(set), ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		if !isRange {
			if _, err := strconv.Atoi(lo); err != nil {
				return 0, err
			}
			n++
			continue
		}
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0, err
		}
		b, err := strconv.Atoi(hi)
		if err != nil {
			return 0, err
		}
		n += b - a + 1
	}
	if n == 0 {
		return 0, fmt.Errorf("empty cpuset %q", set)
	}
	return n, nil
}

// CgroupVersion tells which cgroup hierarchy is mounted at root, as the
// KCL's OperatingRangeDataProvider does: 2 when cgroup.controllers exists,
// 1 when cpu or memory does, 0 when neither.
func CgroupVersion(root string) int {
	if root == "" {
		root = DefaultCgroupRoot
	}
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		return 2
	}
	for _, d := range []string{"cpu", "memory"} {
		if _, err := os.Stat(filepath.Join(root, d)); err == nil {
			return 1
		}
	}
	return 0
}

func firstLine(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	if s.Scan() {
		return strings.TrimSpace(s.Text()), nil
	}
	if err := s.Err(); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return "", fmt.Errorf("%s is empty", path)
}

func readInt(path string) (int64, error) {
	line, err := firstLine(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(line, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
