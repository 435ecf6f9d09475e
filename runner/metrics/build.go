package metrics

// Build names the kcltool binary: kcltool_build_info's labels. The caller
// passes it in (cmd/run, from internal/buildinfo), so that the metrics
// report what the binary says of itself.
type Build struct {
	Version, Commit, GoVersion string
}

// SetBuild sets what kcltool_build_info reports.
func (m *Metrics) SetBuild(b Build) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.build = b
}

// buildInfo reads it for a scrape.
func (m *Metrics) buildInfo() Build {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.build
}

// writeBuildInfo writes kcltool_build_info, the usual constant 1 whose
// labels name the binary, so that dashboards can join on the version.
func writeBuildInfo(p *promWriter, b Build) {
	p.single("kcltool_build_info", "gauge", "The kcltool binary: its version, commit and Go release; always 1.",
		[]string{"version", b.Version, "commit", b.Commit, "goversion", b.GoVersion}, 1)
}
