package run

import (
	"os"
	"os/signal"
	"syscall"
)

// notifySignals delivers SIGINT and SIGTERM to a channel of run's own, next
// to cmd.Main's signal.NotifyContext, which ends the command's context on the
// first one and swallows the rest. stop undoes the registration.
//
// Handlers run in process groups of their own, so a Ctrl-C at a terminal
// reaches kcltool only, which then lets them finish.
func notifySignals() (<-chan os.Signal, func()) {
	c := make(chan os.Signal, 2)
	signal.Notify(c, os.Interrupt, syscall.SIGTERM)
	return c, func() { signal.Stop(c) }
}
