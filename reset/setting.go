package reset

import "fmt"

// Setting is a planning option an error asks the reader to give or change.
// reset's errors name settings, not flags: the flags are cmd's, which says
// them in its own words through InputError.Say.
type Setting string

// The settings reset's errors name, spelled as run's and checkpoint's flags
// are without their dashes, so that a caller can map them one to one.
const (
	SettingStream     Setting = "stream"
	SettingShard      Setting = "shard"
	SettingToSequence Setting = "to-sequence"
	SettingToApp      Setting = "to-app"
	SettingPrune      Setting = "prune"
	SettingAt         Setting = "at"
	SettingSkip       Setting = "skip-invalid"
)

// String is the setting in an error nobody renamed: its option's name.
func (s Setting) String() string { return "the " + string(s) + " option" }

// Say is the error's text with each Setting it names said by name; for an
// InputError that names none, it is Error().
func (e *InputError) Say(name func(Setting) string) string {
	if s, ok := e.Err.(interface {
		Say(func(Setting) string) string
	}); ok && e.format == "" {
		return s.Say(name)
	}
	if e.format == "" {
		return e.Error()
	}
	args := make([]any, len(e.args))
	for i, a := range e.args {
		if s, ok := a.(Setting); ok {
			a = name(s)
		}
		args[i] = a
	}
	return fmt.Sprintf(e.format, args...)
}
