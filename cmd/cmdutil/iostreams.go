package cmdutil

import (
	"io"
	"os"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	"golang.org/x/term"
)

// IOStreams are the three standard streams plus what kcltool decided about
// them once: whether stdout is a terminal and whether to use colour.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	OutTTY bool
	ErrTTY bool
	InTTY  bool
	// Color is set by the root command from --color, NO_COLOR and the TTY.
	Color bool
}

// SystemIO returns the process's real streams.
func SystemIO() *IOStreams {
	return &IOStreams{
		In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		OutTTY: isTerminal(os.Stdout), ErrTTY: isTerminal(os.Stderr), InTTY: isTerminal(os.Stdin),
	}
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// DecideColor applies the house rule: --color always/never wins; otherwise
// colour only on a terminal, unless NO_COLOR is set or TERM is dumb.
// CLICOLOR_FORCE=1 forces it on like --color always.
func DecideColor(mode string, tty bool, getenv func(string) string) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	if getenv("NO_COLOR") != "" {
		return false
	}
	if getenv("CLICOLOR_FORCE") != "" && getenv("CLICOLOR_FORCE") != "0" {
		return true
	}
	return tty && getenv("TERM") != "dumb"
}

// Styles are the few lipgloss styles kcltool uses, bound to one writer so
// no global renderer state is shared.
type Styles struct {
	Header, Warn, Bad, Good, Dim lipgloss.Style
}

// Styles returns styles that render colour only when io.Color is set.
func (s *IOStreams) Styles() Styles {
	r := lipgloss.NewRenderer(s.Out)
	if s.Color {
		r.SetColorProfile(termenv.ANSI)
	} else {
		r.SetColorProfile(termenv.Ascii)
	}
	return Styles{
		Header: r.NewStyle().Bold(true),
		Warn:   r.NewStyle().Foreground(lipgloss.Color("3")),
		Bad:    r.NewStyle().Foreground(lipgloss.Color("1")),
		Good:   r.NewStyle().Foreground(lipgloss.Color("2")),
		Dim:    r.NewStyle().Faint(true),
	}
}
