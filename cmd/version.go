package cmd

import "github.com/kcltool/kcltool/internal/buildinfo"

// versionString is "VERSION (commit COMMIT)" (internal/buildinfo).
func versionString() string { return buildinfo.String() }
