// Package buildinfo says which kcltool this is: the version and commit the
// release build stamps in with -ldflags, else what the Go toolchain
// recorded in the binary.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Set at build time by the Makefile (and the release build):
// -ldflags "-X github.com/kcltool/kcltool/internal/buildinfo.version=... -X ...buildinfo.commit=...".
var (
	version = ""
	commit  = ""
)

// Version is the stamped version, else "dev".
func Version() string {
	if version != "" {
		return version
	}
	return "dev"
}

// Commit is the stamped commit, else the toolchain's VCS stamp, else
// "unknown"; at most 12 characters.
func Commit() string {
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
	return c
}

// GoVersion is the Go release the binary was built with.
func GoVersion() string { return runtime.Version() }

// String is "VERSION (commit COMMIT)", as --version prints it.
func String() string { return Version() + " (commit " + Commit() + ")" }
