package cmdutil

import (
	"io"
	"os"
	"strconv"
	"strings"

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
	// Width is the width tables and text fit: the terminal's, or COLUMNS
	// (see DecideWidth); 0 prints them whole. Tests set it.
	Width int
	// Table holds the table flags of the running command (AddTableFlags).
	Table TableOptions
}

// SystemIO returns the process's real streams.
func SystemIO() *IOStreams {
	return &IOStreams{
		In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		OutTTY: isTerminal(os.Stdout), ErrTTY: isTerminal(os.Stderr), InTTY: isTerminal(os.Stdin),
	}
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// DecideWidth is the width output fits: the terminal's when stdout is one;
// else COLUMNS when set (`watch kcltool lag` sets it and pipes stdout);
// else 0, so pipes and scripts get whole values.
func DecideWidth(tty bool, getenv func(string) string) int {
	if tty {
		if w, _, err := term.GetSize(int(os.Stdout.Fd())); err == nil && w > 0 {
			return w
		}
	}
	return columnsEnv(getenv)
}

func columnsEnv(getenv func(string) string) int {
	n, err := strconv.Atoi(strings.TrimSpace(getenv("COLUMNS")))
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

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
