package buildinfo

import (
	"runtime/debug"
	"testing"
)

// fakeBuild makes Read see the given stamps and toolchain record, and puts
// the real ones back when the test ends.
func fakeBuild(t *testing.T, stampVersion, stampCommit string, bi *debug.BuildInfo) {
	t.Helper()
	oldV, oldC, oldR := version, commit, readBuildInfo
	t.Cleanup(func() { version, commit, readBuildInfo = oldV, oldC, oldR })
	version, commit = stampVersion, stampCommit
	readBuildInfo = func() (*debug.BuildInfo, bool) { return bi, bi != nil }
}

func record(mainVersion string, settings ...string) *debug.BuildInfo {
	bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/kcltool/kcltool", Version: mainVersion}}
	for i := 0; i+1 < len(settings); i += 2 {
		bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
	}
	return bi
}

func TestRead(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct {
		name           string
		stampV, stampC string
		bi             *debug.BuildInfo
		want           Info
		wantShort      string
	}{
		// go install github.com/kcltool/kcltool@v1.2.3: no stamps, the
		// module version recorded, no VCS settings.
		{"go install @version", "", "", record("v1.2.3"), Info{Version: "v1.2.3", Commit: "unknown"}, "unknown"},
		// go build in a clone with VCS stamping on.
		{"clone build", "", "", record("(devel)", "vcs.revision", rev, "vcs.modified", "true"),
			Info{Version: "dev", Commit: rev, Modified: true}, "0123456789ab"},
		{"clone build, clean tree", "", "", record("(devel)", "vcs.revision", rev, "vcs.modified", "false"),
			Info{Version: "dev", Commit: rev}, "0123456789ab"},
		// A release or make build: the stamps win over the record.
		{"stamped", "v2.0.0", "fedcba9876543210", record("v1.2.3", "vcs.revision", rev),
			Info{Version: "v2.0.0", Commit: "fedcba9876543210"}, "fedcba987654"},
		{"no build info", "", "", nil, Info{Version: "dev", Commit: "unknown"}, "unknown"},
		{"empty module version", "", "", record(""), Info{Version: "dev", Commit: "unknown"}, "unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fakeBuild(t, tc.stampV, tc.stampC, tc.bi)
			got := Read()
			got.GoVersion, got.OS, got.Arch = "", "", ""
			if got != tc.want {
				t.Errorf("Read() = %+v, want %+v", got, tc.want)
			}
			if Version() != tc.want.Version || Commit() != tc.wantShort {
				t.Errorf("Version(), Commit() = %q, %q; want %q, %q", Version(), Commit(), tc.want.Version, tc.wantShort)
			}
			if s, want := String(), tc.want.Version+" (commit "+tc.wantShort+")"; s != want {
				t.Errorf("String() = %q, want %q", s, want)
			}
		})
	}
}

func TestReadPlatform(t *testing.T) {
	fakeBuild(t, "", "", nil)
	in := Read()
	if in.GoVersion == "" || in.OS == "" || in.Arch == "" {
		t.Errorf("Read() left the platform empty: %+v", in)
	}
}
