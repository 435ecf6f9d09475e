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

// readBuildInfo is debug.ReadBuildInfo; a test replaces it, since a test
// binary's own build info has no module version to read.
var readBuildInfo = debug.ReadBuildInfo

// Info is everything kcltool knows about its own build.
type Info struct {
	// Version is the stamped version, else the module version the toolchain
	// recorded (`go install github.com/kcltool/kcltool@v1.2.3` records
	// v1.2.3), else "dev".
	Version string
	// Commit is the stamped commit, else the toolchain's vcs.revision, else
	// "unknown"; in full.
	Commit string
	// Modified is the toolchain's vcs.modified: the binary was built from a
	// work tree with uncommitted changes. False when not recorded (release
	// builds, go install, -buildvcs=false).
	Modified  bool
	GoVersion string
	OS, Arch  string
}

// Read gathers the build's facts: the -ldflags stamps first, since a
// release build sets them on purpose, then the toolchain's record.
func Read() Info {
	in := Info{Version: version, Commit: commit, GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if bi, ok := readBuildInfo(); ok {
		// "(devel)" is what a build inside the module's own tree records:
		// it names no release, so it is no better than "dev".
		if in.Version == "" && bi.Main.Version != "(devel)" {
			in.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if in.Commit == "" {
					in.Commit = s.Value
				}
			case "vcs.modified":
				in.Modified = s.Value == "true"
			}
		}
	}
	if in.Version == "" {
		in.Version = "dev"
	}
	if in.Commit == "" {
		in.Commit = "unknown"
	}
	return in
}

// Version is Read's version: stamped, else the module's, else "dev".
func Version() string { return Read().Version }

// Commit is Read's commit, at most 12 characters.
func Commit() string {
	c := Read().Commit
	if len(c) > 12 {
		c = c[:12]
	}
	return c
}

// GoVersion is the Go release the binary was built with.
func GoVersion() string { return runtime.Version() }

// String is "VERSION (commit COMMIT)", as --version prints it.
func String() string { return Version() + " (commit " + Commit() + ")" }
