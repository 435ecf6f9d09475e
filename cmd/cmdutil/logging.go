package cmdutil

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/aws/smithy-go/logging"
)

// LogFlags are the root's --log-level and --log-format: every command
// logs through the same structured logger on stderr (run's worker log,
// the SDK's own messages at debug, the raw text behind an explained error).
type LogFlags struct {
	Level, Format string
}

// NewLogger builds the structured log on stderr: text for a person at a
// terminal (message, error and the handler's words first, sequence
// numbers shortened: textHandler), JSON Lines for a log pipeline, every
// attribute whole and in the order logged.
func NewLogger(level, format string, w io.Writer, terminal bool) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, UsageErrorf("invalid --log-level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv, ReplaceAttr: durationsAsText}
	switch format {
	case "auto":
		if terminal {
			return slog.New(newTextHandler(w, opts)), nil
		}
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(newTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, UsageErrorf("invalid --log-format %q: use auto, text or json", format)
}

// durationsAsText writes every time.Duration as Go writes it ("10s",
// "1m30s"): slog's JSON handler would write nanoseconds (10000000000),
// which nobody reads at 3 a.m. Done here, once, so that no log call can
// forget it.
func durationsAsText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}

// discardLogger is the log of code that runs before the root's flags are
// read (shell completion): it must print nothing.
var discardLogger = slog.New(slog.DiscardHandler)

// sdkLogger routes the AWS SDK's own messages, such as the EC2 metadata
// client's "falling back to IMDSv1" warning, into kcltool's log at debug.
// The SDK would otherwise print them on stderr on its own, in its own
// format, in the middle of a command's output, for a fallback that is the
// normal path off EC2.
type sdkLogger struct{ log func() *slog.Logger }

func (l sdkLogger) Logf(c logging.Classification, format string, v ...any) {
	l.log().Debug(fmt.Sprintf(format, v...), "source", "aws-sdk", "sdk_level", string(c))
}

var _ logging.Logger = sdkLogger{}

// StderrIsTerminal is whether logs go to a person.
func StderrIsTerminal(f *Factory) bool {
	if f.IO.ErrTTY {
		return true
	}
	if file, ok := f.IO.ErrOut.(*os.File); ok {
		return isTerminal(file)
	}
	return false
}
