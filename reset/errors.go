package reset

import (
	"errors"
	"fmt"
	"strings"
)

// InputError is bad input found while planning: an unknown shard, a time
// that does not parse or lies in the future, a sequence number that is not a
// record of the shard, a file that is neither an export nor a positions CSV.
// Planning writes nothing, so nothing was written.
type InputError struct {
	Err error
	// format and args made Err (inputErrorf), kept so that Say can say
	// the Settings among args in the caller's words.
	format string
	args   []any
}

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func inputErrorf(format string, args ...any) error {
	return &InputError{Err: fmt.Errorf(format, args...), format: format, args: args}
}

// IsInputError reports whether err is (or wraps) an *InputError.
func IsInputError(err error) bool {
	var ie *InputError
	return errors.As(err, &ie)
}

// RefusedError says why a plan was not applied at all: the application is
// running, or leases are in a KCL 3.x graceful handoff. It is returned
// before the backup and before any write.
type RefusedError struct {
	// Workers are the owners of the leases whose counter moved during the
	// sample: the live workers.
	Workers []string
	// Moved are the lease keys whose counter moved.
	Moved []string
	// Handoff are the lease keys with a checkpointOwner.
	Handoff []string
}

// Error says why, naming the override by its option (ExecOptions.Force);
// cmd says it with the flag's name through Explain.
func (e *RefusedError) Error() string { return e.Explain("set Force") }

// Explain says why the plan was refused; override is how the reader goes
// ahead anyway, in the caller's words ("pass --force").
func (e *RefusedError) Explain(override string) string {
	var parts []string
	if len(e.Moved) > 0 {
		who := "unowned leases"
		if len(e.Workers) > 0 {
			who = "workers " + strings.Join(e.Workers, ", ")
		}
		counters := "1 lease counter"
		if len(e.Moved) != 1 {
			counters = fmt.Sprintf("%d lease counters", len(e.Moved))
		}
		parts = append(parts, fmt.Sprintf("the application is running: %s moved during the sample (%s); stop it first, or %s to reset it live", counters, who, override))
	}
	if len(e.Handoff) > 0 {
		parts = append(parts, fmt.Sprintf("leases in a KCL 3.x graceful handoff (checkpointOwner set): %s; wait for the handoff to finish, or %s", strings.Join(e.Handoff, ", "), override))
	}
	return strings.Join(parts, "; ")
}
