package cmd

import (
	"fmt"
	"runtime/debug"
)

// Set at build time by the Makefile:
// -ldflags "-X github.com/kcltool/kcltool/cmd.version=... -X ...cmd.commit=...".
var (
	version = "dev"
	commit  = ""
)

// versionString is "VERSION (commit COMMIT)". Without a commit from the
// linker, the Go toolchain's VCS stamp is used when present.
func versionString() string {
	c := commit
	if c == "" {
		if info, ok := debug.ReadBuildInfo(); ok {
			for _, s := range info.Settings {
				if s.Key == "vcs.revision" {
					c = s.Value
				}
			}
		}
	}
	if c == "" {
		c = "unknown"
	}
	if len(c) > 12 {
		c = c[:12]
	}
	return fmt.Sprintf("%s (commit %s)", version, c)
}
