package runner

import (
	"testing"

	"github.com/kcltool/kcltool/coordination"
)

// What --create-table makes follows --kcl-version and, for 3, the
// clientVersionConfig as KCL 3.5.1 starts a new application under it
// (MigrationClientVersionStateInitializer.getNextClientVersionBasedOnConfigVersion).
func TestNewApplicationFollowsKCLVersionAndConfig(t *testing.T) {
	for _, c := range []struct {
		version int
		config  string
		want    coordination.NewApplication
	}{
		{3, ClientVersionConfig3X, coordination.NewApplication{Index: true, ClientVersion: coordination.ClientVersion3X, ModifiedBy: "w"}},
		{3, ClientVersionConfigCompatible2X, coordination.NewApplication{Index: true, ClientVersion: coordination.ClientVersionUpgradeFrom2X, ModifiedBy: "w"}},
		{3, ClientVersionConfigCompatible2XPhase1, coordination.NewApplication{}},
		{2, ClientVersionConfig3X, coordination.NewApplication{}},
		{2, ClientVersionConfigCompatible2X, coordination.NewApplication{}},
	} {
		w := &Worker{cfg: Config{KCLVersion: c.version, WorkerID: "w", KCL3: KCL3Config{ClientVersionConfig: c.config}}}
		if got := w.newApplication(); got != c.want {
			t.Errorf("--kcl-version %d, %s: %+v, want %+v", c.version, c.config, got, c.want)
		}
	}
}
