package retrieval

import (
	"os"
	"testing"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

func TestMain(m *testing.M) { os.Exit(emulator.Main(m)) }
