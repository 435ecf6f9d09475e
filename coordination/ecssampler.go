package coordination

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// EcsCPU is EcsCpuWorkerMetric: the container's CPU utilisation from the
// ECS task metadata endpoint v4 (its /stats, /task and root documents),
// as a percentage of the CPU the container may use, at most 100. The cmd
// layer passes the endpoint, ECS_CONTAINER_METADATA_URI_V4, which the KCL
// reads from the environment.
type EcsCPU struct {
	root   string
	client *http.Client

	mu     sync.Mutex
	limit  float64 // the container's CPUs; 0 until read once
	online float64
}

// NewEcsCPU reads the metadata endpoint root with client (a client with a
// 5 s timeout when nil).
func NewEcsCPU(root string, client *http.Client) *EcsCPU {
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	return &EcsCPU{root: strings.TrimSuffix(root, "/"), client: client}
}

func (*EcsCPU) Name() string          { return cpuMetricName }
func (*EcsCPU) MaxUtilization() int64 { return cpuMaxUtil }

type ecsCPUStats struct {
	CPUUsage struct {
		TotalUsage int64 `json:"total_usage"`
	} `json:"cpu_usage"`
	SystemCPUUsage int64   `json:"system_cpu_usage"`
	OnlineCPUs     float64 `json:"online_cpus"`
}

type ecsStats struct {
	CPUStats    ecsCPUStats `json:"cpu_stats"`
	PreCPUStats ecsCPUStats `json:"precpu_stats"`
}

type ecsLimits struct {
	CPU *float64 `json:"CPU"`
}

type ecsTask struct {
	Limits     *ecsLimits `json:"Limits"`
	Containers []struct {
		DockerID string     `json:"DockerId"`
		Limits   *ecsLimits `json:"Limits"`
	} `json:"Containers"`
}

type ecsContainer struct {
	DockerID string `json:"DockerId"`
}

// Sample follows EcsCpuWorkerMetric.calculateCpuUsage: the docker stats
// carry this and the previous reading, so one request is enough; 0 when
// there is no previous reading yet, 100 when the system counter did not
// move.
func (e *EcsCPU) Sample() (float64, error) {
	var st ecsStats
	if err := e.get("/stats", &st); err != nil {
		return 0, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.limit == 0 {
		e.online = st.CPUStats.OnlineCPUs
		limit, err := e.containerLimit(e.online)
		if err != nil {
			return 0, err
		}
		e.limit = limit
	}
	cur, prev := st.CPUStats, st.PreCPUStats
	if prev.CPUUsage.TotalUsage == 0 && prev.SystemCPUUsage == 0 {
		return 0, nil
	}
	sysDiff := cur.SystemCPUUsage - prev.SystemCPUUsage
	if sysDiff == 0 {
		return 100, nil
	}
	cores := float64(cur.CPUUsage.TotalUsage-prev.CPUUsage.TotalUsage) / float64(sysDiff) * e.online
	return min(100, cores/e.limit*100), nil
}

// containerLimit is calculateContainerCpuLimit: the task's CPU limit (the
// online CPUs when the task sets none), shared among its containers by
// their CPU shares (2 for this container when it declares none).
func (e *EcsCPU) containerLimit(online float64) (float64, error) {
	var task ecsTask
	if err := e.get("/task", &task); err != nil {
		return 0, err
	}
	var me ecsContainer
	if err := e.get("", &me); err != nil {
		return 0, err
	}
	taskLimit := online
	if task.Limits != nil && task.Limits.CPU != nil {
		taskLimit = *task.Limits.CPU
	}
	share, sum := 2.0, 0.0
	for _, c := range task.Containers {
		v := 0.0
		if c.Limits != nil && c.Limits.CPU != nil {
			v = *c.Limits.CPU
		}
		if c.DockerID == me.DockerID {
			share = v
		}
		sum += v
	}
	// No shares at all: the KCL divides by zero there; kcltool gives the
	// container the task's limit.
	if sum <= 0 {
		return positive(taskLimit)
	}
	return positive(share / sum * taskLimit)
}

func positive(limit float64) (float64, error) {
	if limit <= 0 {
		return 0, fmt.Errorf("ECS task metadata gives this container no CPU limit (%v)", limit)
	}
	return limit, nil
}

func (e *EcsCPU) get(path string, into any) error {
	url := e.root + path
	resp, err := e.client.Get(url)
	if err != nil {
		return fmt.Errorf("ECS task metadata: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("ECS task metadata %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		return fmt.Errorf("ECS task metadata %s: %w", url, err)
	}
	return nil
}
