package cmd

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/runner"
)

// everyValueValid are the settings with no value to reject: adding one
// here is saying so on purpose.
var everyValueValid = map[string]string{
	"exec":              "any command runs",
	"multilang-timeout": "zero or less is no limit, as the MultiLangDaemon's timeoutInSeconds",
	"on-failure":        "a folder is created on the first failure",
	"worker-id":         "any leaseOwner",
	"metrics-addr":      "checked when the worker listens",
}

// notSettings are run's flags about the invocation, not the worker.
var notSettings = map[string]bool{"properties": true, "print-config": true, "output": true, "help": true}

// TestRunSettingsTable walks runSettings: every entry has a flag of run,
// its KCLTOOL_ variable, usage and a check; names a runner.Config field
// that exists; its properties key maps back to it; and every flag of run
// comes from the table.
func TestRunSettingsTable(t *testing.T) {
	f := cmdutil.NewFactory(&cmdutil.IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, func(string) string { return "" })
	run, _, err := NewRootCmd(f).Find([]string{"run"})
	if err != nil {
		t.Fatal(err)
	}
	flagOf := func(name string) *pflag.Flag {
		if fl := run.Flags().Lookup(name); fl != nil {
			return fl
		}
		return run.InheritedFlags().Lookup(name)
	}
	seen := map[string]bool{}
	for _, s := range runSettings {
		if s.flag == "" || seen[s.flag] {
			t.Errorf("entry %+v: no flag, or a second entry for it", s)
			continue
		}
		seen[s.flag] = true
		if want := "KCLTOOL_" + strings.ToUpper(strings.ReplaceAll(s.flag, "-", "_")); s.env != want || cmdutil.EnvName(s.flag) != want {
			t.Errorf("%s: env %q, want %q", s.flag, s.env, want)
		}
		fl := flagOf(s.flag)
		switch {
		case fl == nil:
			t.Errorf("%s: not a flag of run", s.flag)
		case s.usage == "":
			t.Errorf("%s: no usage", s.flag)
		case !s.shared && !strings.HasPrefix(fl.Usage, s.usage):
			t.Errorf("%s: usage %q is not the table's %q", s.flag, fl.Usage, s.usage)
		}
		if s.invalid == "" && !s.shared && everyValueValid[s.flag] == "" {
			t.Errorf("%s: no invalid value (no check); add one, or list it in everyValueValid with why", s.flag)
		}
		if s.field != "" && !configHasField(s.field) {
			t.Errorf("%s: runner.Config has no field %s", s.flag, s.field)
		}
		if s.field == "" && s.opt == "" && !s.shared {
			t.Errorf("%s: bound to nothing (no field, no opt)", s.flag)
		}
		if s.opt != "" && !reflect.ValueOf(runOptions{}).FieldByName(s.opt).IsValid() {
			t.Errorf("%s: runOptions has no field %s", s.flag, s.opt)
		}
		if s.property != "" {
			if back, ok := settingOfProperty(s.property); !ok || back.flag != s.flag {
				t.Errorf("%s: properties key %s maps to %q", s.flag, s.property, back.flag)
			}
			if specialKeys[s.property] || fanoutKeys[s.property] || quietKeys[s.property] || multiLangKeys[s.property] {
				t.Errorf("%s: properties key %s is also handled by a step of its own", s.flag, s.property)
			}
		}
	}
	run.LocalNonPersistentFlags().VisitAll(func(fl *pflag.Flag) {
		if !notSettings[fl.Name] && !seen[fl.Name] {
			t.Errorf("--%s is a flag of run but not in runSettings", fl.Name)
		}
	})
}

// configHasField follows a path of field names ("Lease.FailoverTime")
// through runner.Config's type, pointers included.
func configHasField(path string) bool {
	typ := reflect.TypeOf(runner.Config{})
	for _, name := range strings.Split(path, ".") {
		if typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct {
			return false
		}
		sf, ok := typ.FieldByName(name)
		if !ok {
			return false
		}
		typ = sf.Type
	}
	return true
}

// TestRunSettingsRejectInvalid: each setting's invalid value, given as the
// flag or as its KCLTOOL_ variable, is a usage error that names the flag.
func TestRunSettingsRejectInvalid(t *testing.T) {
	base := []string{"run", "--app", "orders", "--stream", "orders", "--exec", "cat", "--print-config", "-o", "json"}
	try := func(env map[string]string, args ...string) (int, string) {
		var out, errOut bytes.Buffer
		f := cmdutil.NewFactory(&cmdutil.IOStreams{Out: &out, ErrOut: &errOut}, func(k string) string { return env[k] })
		return Run(context.Background(), f, append(append([]string{}, base...), args...)), errOut.String()
	}
	if code, errOut := try(nil); code != 0 {
		t.Fatalf("the valid base: exit %d: %s", code, errOut)
	}
	for _, s := range runSettings {
		if s.invalid == "" {
			continue
		}
		code, errOut := try(nil, "--"+s.flag+"="+s.invalid)
		if code != cmdutil.ExitUsage || !strings.Contains(errOut, "--"+s.flag) {
			t.Errorf("--%s=%s: exit %d, stderr %q; want 2 and the flag named", s.flag, s.invalid, code, errOut)
		}
		if strings.Contains(strings.Join(base, " "), "--"+s.flag+" ") {
			continue // the command line wins over the variable
		}
		code, errOut = try(map[string]string{s.env: s.invalid})
		if code != cmdutil.ExitUsage || !strings.Contains(errOut, "--"+s.flag) {
			t.Errorf("%s=%s: exit %d, stderr %q; want 2 and the flag named", s.env, s.invalid, code, errOut)
		}
	}
}
