package cmdutil

import (
	"time"

	"github.com/kcltool/kcltool/internal/shellquote"
)

// optionalValueFlags may be given bare (--sample means --sample=10s).
var optionalValueFlags = map[string]bool{"--sample": true}

// JoinOptionalValues turns "--sample 400ms" into "--sample=400ms". pflag
// only binds an optional value written with "=", and would otherwise read
// 400ms as a stray argument: users write the space form by habit.
func JoinOptionalValues(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if optionalValueFlags[a] && i+1 < len(args) {
			if _, err := time.ParseDuration(args[i+1]); err == nil {
				out = append(out, a+"="+args[i+1])
				i++
				continue
			}
		}
		out = append(out, a)
	}
	return out
}

// RequireFlag fails with a usage error naming the flag and its variable.
func RequireFlag(name, value string) error {
	if value == "" {
		return UsageErrorf("--%s is required (or set %s)", name, EnvName(name))
	}
	return nil
}

// ShellQuote quotes a word of a printed command for a POSIX shell; the one
// implementation is shared with doctor's repair commands.
var ShellQuote = shellquote.Quote
