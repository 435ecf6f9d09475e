package processor

import (
	"context"
	"errors"
	"time"
)

// termGrace is the grace a cancelled handler gets between SIGTERM and
// SIGKILL: none (SIGKILL at once) unless the cancellation's cause asks for
// one through a TermGrace method, as the runner's lease deadline does.
func termGrace(ctx context.Context, cancelled bool) time.Duration {
	var g interface{ TermGrace() time.Duration }
	if !cancelled || !errors.As(context.Cause(ctx), &g) {
		return 0
	}
	return g.TermGrace()
}
