package coordination

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
)

// ecsEndpoint serves the task metadata v4 documents from fixtures: there
// is no local ECS agent to run, so this is a fake of its three answers.
func ecsEndpoint(t *testing.T, stats, task string) string {
	t.Helper()
	files := map[string]string{"/v4/stats": stats, "/v4/task": task, "/v4": "container.json"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		http.ServeFile(w, r, filepath.Join("testdata", "ecs", f))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v4"
}

func TestEcsCPU(t *testing.T) {
	cases := []struct {
		name, stats, task string
		want              float64
	}{
		// 0.8 cores of a task limit of 2 CPUs shared 512:512: 80%.
		{"task limit, two containers", "stats.json", "task.json", 80},
		// No task limit: the 4 online CPUs, halved by the shares: 40%.
		{"no task limit", "stats.json", "task-nolimit.json", 40},
		// No previous reading yet.
		{"first reading", "stats-first.json", "task.json", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := NewEcsCPU(ecsEndpoint(t, c.stats, c.task), nil)
			got, err := s.Sample()
			if err != nil || !near(got, c.want) {
				t.Fatalf("Sample = %v, %v; want %v", got, err, c.want)
			}
		})
	}
	if _, err := NewEcsCPU(ecsEndpoint(t, "missing.json", "task.json"), nil).Sample(); err == nil {
		t.Fatal("no error when the endpoint fails")
	}
}
