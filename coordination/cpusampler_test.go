package coordination

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/clocktest"
)

// copyFile puts the fixture src at dst, as the kernel would rewrite it.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyTree copies a fixture directory (its files, not the ".later" ones).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || filepath.Ext(p) == ".later" {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		copyFile(t, p, filepath.Join(dst, rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestProcStatCPU(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stat")
	s := NewProcStatCPU(path)
	if s.Name() != "C" || s.MaxUtilization() != 100 {
		t.Fatalf("name %q max %d", s.Name(), s.MaxUtilization())
	}
	if _, err := s.Sample(); err == nil {
		t.Fatal("no error for a missing file")
	}
	steps := []struct {
		file string
		want float64
	}{
		{"1", 0},                 // first capture: nothing to subtract
		{"2", 100.0 * 150 / 450}, // busy 150 of 450 jiffies
		{"3-iowait-down", 0},     // total grew less than idle, iowait fell
		{"4-unchanged", 0},       // same line
	}
	for _, st := range steps {
		copyFile(t, filepath.Join("testdata", "procstat", st.file), path)
		got, err := s.Sample()
		if err != nil || !near(got, st.want) {
			t.Fatalf("after %s: %v, %v; want %v", st.file, got, err, st.want)
		}
	}
}

func TestCgroupCPU(t *testing.T) {
	cases := []struct {
		name, fixture, usage string
		v2                   bool
		want                 float64
	}{
		{"v1 quota 2 CPUs, 1 core used", "cgroupv1/limited", "cpu/cpuacct.usage", false, 50},
		{"v1 no quota, cpuset 0-3,6, 1 core used", "cgroupv1/unlimited", "cpu/cpuacct.usage", false, 20},
		{"v2 max, cpuset 0-1, half a core used", "cgroupv2/unlimited", "cpu.stat", true, 25},
		{"v2 1.5 CPUs, 3 cores used: capped", "cgroupv2/limited", "cpu.stat", true, 100},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			copyTree(t, filepath.Join("testdata", c.fixture), root)
			clk := clocktest.New(time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC))
			s := NewCgroupV1CPU(root, clk)
			if c.v2 {
				s = NewCgroupV2CPU(root, clk)
			}
			if got, err := s.Sample(); err != nil || got != 0 {
				t.Fatalf("first capture: %v, %v; want 0", got, err)
			}
			later := filepath.Join("testdata", c.fixture, filepath.Base(c.usage)+".later")
			copyFile(t, later, filepath.Join(root, c.usage))
			clk.Advance(time.Second)
			if got, err := s.Sample(); err != nil || !near(got, c.want) {
				t.Fatalf("second capture: %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

func TestCountCPUs(t *testing.T) {
	for set, want := range map[string]int{"0": 1, "0-7": 8, "0-3,6": 5, "0-1,4-5,9": 5} {
		if got, err := countCPUs(set); err != nil || got != want {
			t.Fatalf("countCPUs(%q) = %d, %v; want %d", set, got, err, want)
		}
	}
	if _, err := countCPUs("x"); err == nil {
		t.Fatal("no error for a bad cpuset")
	}
}

func TestCgroupVersion(t *testing.T) {
	if v := CgroupVersion(filepath.Join("testdata", "cgroupv2", "unlimited")); v != 2 {
		t.Fatalf("v2 fixture: %d", v)
	}
	if v := CgroupVersion(filepath.Join("testdata", "cgroupv1", "limited")); v != 1 {
		t.Fatalf("v1 fixture: %d", v)
	}
	if v := CgroupVersion(t.TempDir()); v != 0 {
		t.Fatalf("empty dir: %d", v)
	}
}
