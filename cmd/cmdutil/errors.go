package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"

	"github.com/kcltool/kcltool/internal/awserr"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reset"
	"github.com/kcltool/kcltool/runner"
)

// Exit codes, documented in `kcltool help exit-codes`.
const (
	ExitOK          = 0
	ExitFailure     = 1
	ExitUsage       = 2
	ExitProblems    = 3
	ExitInterrupted = 130
)

// ExitError carries an exit code other than 1. A nil Err prints nothing.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// UsageErrorf reports bad input: exit 2.
func UsageErrorf(format string, args ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// HintError adds "kcltool: hint:" lines under the error.
type HintError struct {
	Err   error
	Hints []string
}

func (e *HintError) Error() string { return e.Err.Error() }
func (e *HintError) Unwrap() error { return e.Err }

// ExitCode maps an error from Execute to the process exit code.
func ExitCode(ctx context.Context, err error) int {
	if err == nil {
		return ExitOK
	}
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return ExitInterrupted
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	if isCobraUsageError(err) {
		return ExitUsage
	}
	return ExitFailure
}

// isCobraUsageError recognises the argument errors cobra builds with
// fmt.Errorf, which carry no type of their own.
func isCobraUsageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command ", "unknown flag: ", "unknown shorthand flag: ", "flag needs an argument", "invalid argument ", "accepts ", "requires at least ", "requires at most ", "required flag(s) "} {
		if strings.HasPrefix(msg, p) || strings.Contains(msg, " "+p) {
			return true
		}
	}
	return false
}

// AWSContext names what a command was touching, so AWS errors can be
// rewritten into text that names the thing and the fix.
type AWSContext struct {
	Table  string
	Stream string
	Region string
}

// ExplainAWS turns the SDK's errors into messages an on-call engineer can
// act on. Unknown errors pass through unchanged.
func ExplainAWS(err error, c AWSContext) error {
	if err == nil {
		return nil
	}
	// Credential failures are wrapped in the request's error, with the
	// credential provider's own network errors inside: they are explained
	// by ExplainCredentials, never as this request's endpoint or access.
	var ce *CredentialsError
	if errors.As(err, &ce) {
		return err
	}
	var oe *smithy.OperationError
	if !errors.As(err, &oe) {
		return err
	}
	service, op := oe.ServiceID, oe.OperationName
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch {
		case awserr.NotFound(err):
			if service == "DynamoDB" && c.Table != "" {
				return &HintError{
					Err:   fmt.Errorf("lease table %q not found in %s (is --app the KCL application name?)", c.Table, c.Region),
					Hints: []string{"the KCL names its lease table after the application unless tableName is set; pass --table to name it directly"},
				}
			}
			if service == "Kinesis" && c.Stream != "" {
				return fmt.Errorf("stream %q not found in %s (check --stream and --region)", c.Stream, c.Region)
			}
		case awserr.AccessDenied(err), awserr.BadCredentials(err):
			// IAM prefixes are the service id in lower case: dynamodb, kinesis, cloudwatch.
			action := strings.ToLower(strings.ReplaceAll(service, " ", "")) + ":" + op
			what := ""
			if c.Table != "" && service == "DynamoDB" {
				what = fmt.Sprintf(" on lease table %q", c.Table)
			} else if c.Stream != "" && service == "Kinesis" {
				what = fmt.Sprintf(" on stream %q", c.Stream)
			}
			return &HintError{
				Err:   fmt.Errorf("access denied: %s%s in %s: %s", action, what, c.Region, ae.ErrorMessage()),
				Hints: []string{fmt.Sprintf("grant the IAM action %s to the caller, or pick other credentials with --profile", action)},
			}
		}
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		var ne net.Error
		var dnsErr *net.DNSError
		var opErr *net.OpError
		if errors.As(err, &opErr) || errors.As(err, &dnsErr) || errors.As(err, &ne) {
			endpoint := ue.URL
			if u, perr := url.Parse(ue.URL); perr == nil {
				endpoint = u.Scheme + "://" + u.Host
			}
			return &HintError{
				Err:   fmt.Errorf("cannot reach the %s endpoint %s: %v", service, endpoint, innermost(err)),
				Hints: []string{fmt.Sprintf("check --endpoint-url, AWS_ENDPOINT_URL_%s and your network", envServiceName(service))},
			}
		}
	}
	var me *retry.MaxAttemptsError
	if errors.As(err, &me) {
		return fmt.Errorf("%s %s failed after %d attempts: %v", service, op, me.Attempt, innermost(err))
	}
	return err
}

func envServiceName(service string) string {
	return strings.ToUpper(strings.ReplaceAll(service, " ", "_"))
}

func innermost(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}

// SayFlags says, in an error from a domain package, the settings it names
// as the flags that set them: domain packages name settings (reset.Setting),
// only cmd knows flags. The error's text is otherwise kept byte for byte,
// wrapping included, and it still unwraps to the original.
func SayFlags(err error) error {
	if err == nil {
		return nil
	}
	text := err.Error()
	for e := err; e != nil; e = errors.Unwrap(e) {
		var said string
		switch x := e.(type) {
		case *reset.InputError:
			said = x.Say(func(s reset.Setting) string { return settingFlag(string(s)) })
		case *runner.ConsumerGoneError:
			said = x.Say(settingFlag)
		case *runner.MultiStreamTableError:
			said = x.Say(settingFlag)
		case *leasecore.TableNotFoundError:
			said = x.Say(settingFlag)
		case *runner.SettingError:
			said = x.Say(settingFlag)
		default:
			continue
		}
		text = strings.Replace(text, e.Error(), said, 1)
	}
	if text == err.Error() {
		return err
	}
	return &saidError{text: text, err: err}
}

// settingFlag is the flag of a setting a domain error names: settings are
// spelled as their flags are, without the dashes.
func settingFlag(setting string) string { return "--" + setting }

// saidError is an error said in cmd's words.
type saidError struct {
	text string
	err  error
}

func (e *saidError) Error() string { return e.text }
func (e *saidError) Unwrap() error { return e.err }
