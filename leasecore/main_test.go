package leasecore

import (
	"os"
	"testing"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// TestMain stops the local DynamoDB server (dynalite) the tests started.
func TestMain(m *testing.M) { os.Exit(emulator.Main(m)) }
