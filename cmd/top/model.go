package top

import (
	"context"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/kcltool/kcltool/inspect/top"
)

// refreshFunc reads one snapshot: the Sampler's Refresh in the binary, a
// fixed snapshot in the golden tests.
type refreshFunc func(ctx context.Context) (*top.Snapshot, error)

// model is the terminal view: the last snapshot and the keys' state.
type model struct {
	ctx      context.Context
	app      string
	refresh  refreshFunc
	interval time.Duration
	styled   bool

	snap   *top.Snapshot
	err    error
	view   viewState
	width  int
	height int
	// inFlight: a refresh is running; a tick or key does not start another.
	inFlight bool
	// interrupted: ctrl-c ended the view (exit 130), not q (exit 0).
	interrupted bool
}

type snapMsg struct {
	snap *top.Snapshot
	err  error
}

// tickMsg is the interval's timer; gen tells a stale timer from the last.
type tickMsg struct{}

func newModel(ctx context.Context, app string, refresh refreshFunc, interval time.Duration, styled bool) *model {
	return &model{ctx: ctx, app: app, refresh: refresh, interval: interval, styled: styled, inFlight: true}
}

func (m *model) Init() tea.Cmd { return m.read() }

func (m *model) read() tea.Cmd {
	m.inFlight = true
	ctx, refresh := m.ctx, m.refresh
	return func() tea.Msg {
		s, err := refresh(ctx)
		return snapMsg{s, err}
	}
}

func (m *model) tick() tea.Cmd {
	return tea.Tick(m.interval, func(time.Time) tea.Msg { return tickMsg{} })
}

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case snapMsg:
		m.inFlight = false
		if msg.err != nil {
			m.err = msg.err
		} else {
			m.snap, m.err = msg.snap, nil
		}
		return m, m.tick()
	case tickMsg:
		if !m.view.paused && !m.inFlight {
			return m, m.read()
		}
	case tea.KeyMsg:
		return m, m.key(msg)
	}
	return m, nil
}

// key applies one key press.
func (m *model) key(k tea.KeyMsg) tea.Cmd {
	if k.Type == tea.KeyCtrlC {
		m.interrupted = true
		return tea.Quit
	}
	v := &m.view
	if v.typing {
		switch k.Type {
		case tea.KeyEnter:
			v.typing, v.filter = false, v.input
		case tea.KeyEsc:
			v.typing, v.input, v.filter = false, "", ""
		case tea.KeyBackspace:
			if r := []rune(v.input); len(r) > 0 {
				v.input = string(r[:len(r)-1])
			}
		case tea.KeyRunes, tea.KeySpace:
			v.input += string(k.Runes)
		}
		return nil
	}
	if v.help && k.String() != "q" {
		v.help = false // any key but q (which quits) closes the help
		return nil
	}
	switch k.String() {
	case "q":
		return tea.Quit
	case "?":
		v.help = true
	case "s":
		v.sortBy = (v.sortBy + 1) % len(sortColumns)
	case "S":
		v.desc = !v.desc
	case "/":
		v.typing, v.input = true, v.filter
	case "esc":
		v.filter = ""
	case " ":
		v.paused = !v.paused
		if !v.paused && !m.inFlight {
			return m.read()
		}
	case "r":
		if !m.inFlight {
			return m.read()
		}
	}
	return nil
}

var titleStyle = lipgloss.NewStyle().Bold(true)

func (m *model) View() string {
	out := frame{app: m.app, snap: m.snap, err: m.err, view: m.view, width: m.width, height: m.height}.render()
	if !m.styled {
		return out
	}
	// The title and the severities are styled; the words are those of a
	// pipe's frame, so nothing depends on colour.
	first, rest, _ := cutLine(out)
	return titleStyle.Render(first) + colourSeverities(rest, func(s string) string { return criticalStyle.Render(s) }, func(s string) string { return warnStyle.Render(s) })
}

var (
	criticalStyle = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("1"))
	warnStyle     = lipgloss.NewStyle().Foreground(lipgloss.Color("3"))
)

// colourSeverities paints the severity that starts a findings line and
// the one in a shard's FINDINGS cell ("stuck-shard(critical)"). It runs
// on the fitted frame, so the escapes do not count toward any width.
func colourSeverities(s string, critical, warn func(string) string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "critical "):
			l = critical("critical") + l[len("critical"):]
		case strings.HasPrefix(l, "warn "):
			l = warn("warn") + l[len("warn"):]
		}
		l = strings.ReplaceAll(l, "(critical)", "("+critical("critical")+")")
		lines[i] = strings.ReplaceAll(l, "(warn)", "("+warn("warn")+")")
	}
	return strings.Join(lines, "\n")
}

func cutLine(s string) (first, rest string, ok bool) {
	for i := range len(s) {
		if s[i] == '\n' {
			return s[:i], s[i:], true
		}
	}
	return s, "", false
}
