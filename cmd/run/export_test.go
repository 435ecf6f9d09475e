package run

import "reflect"

// The settings table's own test (run_settings_test.go) is an external test:
// it needs the whole command tree, the root's flags and its error handling,
// from cmd, which this package cannot import. These give it the table.

// Settings is runSettings.
var Settings = runSettings

func (s runSetting) Flag() string     { return s.flag }
func (s runSetting) Env() string      { return s.env }
func (s runSetting) Property() string { return s.property }
func (s runSetting) Usage() string    { return s.usage }
func (s runSetting) Field() string    { return s.field }
func (s runSetting) Opt() string      { return s.opt }
func (s runSetting) Invalid() string  { return s.invalid }
func (s runSetting) Shared() bool     { return s.shared }

// FlagOfProperty is the flag of the entry a properties key maps to.
func FlagOfProperty(key string) (string, bool) {
	s, ok := settingOfProperty(key)
	return s.flag, ok
}

// PropertyHasOwnStep reports whether a step of its own applies the key.
func PropertyHasOwnStep(key string) bool {
	return specialKeys[key] || fanoutKeys[key] || quietKeys[key] || multiLangKeys[key] || isKCL3Key(key)
}

// HasOption reports whether runOptions has the named field.
func HasOption(name string) bool {
	return reflect.ValueOf(runOptions{}).FieldByName(name).IsValid()
}

// IsKCL3Key reports whether the key is one of the KCL 3.x keys kcltool
// reads without a flag (run_properties_kcl3.go).
func IsKCL3Key(key string) bool { return isKCL3Key(key) }
