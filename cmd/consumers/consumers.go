// Package consumers holds `kcltool consumers`: ls and deregister of a
// stream's enhanced fan-out consumers.
package consumers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/spf13/cobra"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/fanout"
	"github.com/kcltool/kcltool/inspect"
)

// NewCmd returns `kcltool consumers` and its commands.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{
		Use:     "consumers",
		Short:   "List and retire a stream's enhanced fan-out consumers",
		GroupID: "operate",
	}
	c.AddCommand(newConsumersLsCmd(f), newConsumersDeregisterCmd(f))
	return c
}

type consumersLsOptions struct {
	Stream string
	Output string
}

func newConsumersLsCmd(f *cmdutil.Factory) *cobra.Command {
	o := &consumersLsOptions{}
	c := &cobra.Command{
		Use:     "ls --stream STREAM",
		Aliases: []string{"list"},
		Short:   "List the enhanced fan-out consumers registered on a stream",
		Long: `List every consumer registered on the stream for enhanced fan-out (EFO), with
its status and creation time, sorted by name. A KCL application that reads
with fan-out (KCL 2.x and 3.x by default, kcltool run --efo) registers a
consumer named after the application; each one is billed per shard-hour
(see docs/efo.md).

STATUS is Kinesis's: CREATING (registered, not usable yet), ACTIVE, or
DELETING (deregistered, going away). Kinesis allows 20 consumers per
stream; a note says when few registrations are left (on stderr with -o json
and -o csv).`,
		Example: `  kcltool consumers ls --stream orders
  kcltool consumers ls --stream orders -o wide          # with the consumer ARNs
  kcltool consumers ls --stream orders -o json | jq -r '.[] | select(.ConsumerStatus != "ACTIVE") | .ConsumerName'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.CheckOutput(o.Output); err != nil {
				return err
			}
			if err := cmdutil.RequireFlag("stream", o.Stream); err != nil {
				return err
			}
			l, err := listConsumers(cmd.Context(), f, o.Stream)
			if err != nil {
				return err
			}
			if note := limitNote(l); note != "" && (o.Output == cmdutil.FormatJSON || o.Output == cmdutil.FormatCSV) {
				fmt.Fprintf(f.IO.ErrOut, "kcltool: warning: stream %s: %s\n", o.Stream, note)
			}
			return renderConsumers(f, o.Output, consumersView{stream: o.Stream, consumers: l.Consumers, listing: l, now: f.Clock.Now})
		},
	}
	c.Flags().StringVar(&o.Stream, "stream", "", "stream name")
	cmdutil.AddOutputFlag(c, &o.Output)
	cmdutil.AddTableFlags(c, f.IO, "CONSUMER-NAME", "STATUS", "CREATED", "AGE", "CONSUMER-ARN")
	return c
}

// listConsumers lists the stream's consumers, explaining AWS errors.
func listConsumers(ctx context.Context, f *cmdutil.Factory, stream string) (*fanout.ConsumerListing, error) {
	kin, err := f.Kinesis(ctx)
	if err != nil {
		return nil, err
	}
	l, err := fanout.ListStreamConsumers(ctx, kin, stream, fanout.ListOptions{})
	if err != nil {
		return nil, cmdutil.ExplainAWS(err, f.AWSContext("", stream))
	}
	return l, nil
}

type consumersDeregisterOptions struct {
	cmdutil.AppFlags
	Stream       string
	ConsumerName string
	Execute      bool
	Force        bool
	Sample       time.Duration
	Output       string
}

func newConsumersDeregisterCmd(f *cmdutil.Factory) *cobra.Command {
	o := &consumersDeregisterOptions{}
	c := &cobra.Command{
		Use:   "deregister --stream STREAM --consumer-name NAME [--app APP] [--execute [--force]]",
		Short: "Deregister a retired application's stream consumer: plan first, apply with --execute",
		Long: `Deregister an enhanced fan-out consumer from the stream, for example after
retiring the application that read with it: a registered consumer is billed
per shard-hour whether or not anything reads with it, and a stream has room
for 20.

Without --execute this is a dry run: it prints the consumer and what would
happen, reads the application's lease table once, and warns when its leases
have owners. With --execute it first checks that the application is
stopped: no lease counter of its lease table may move for --sample (the KCL
failover time, 10s), and it refuses with exit 3 otherwise, naming the live
workers. It also refuses (exit 3) when the lease table does not exist, since
nothing then says whether the consumer is in use. Then it deregisters the
consumer by its ARN: Kinesis deletes it within seconds (DELETING, then
gone), and no subscription can be made or renewed with it after that.

The application is --app (its lease table is named after it, or --table),
by default the consumer's name: the KCL names the consumer after the
application.

--force deregisters even though the application runs or its table is
missing, and names the workers that renewed leases during --sample: they
are the ones it hurts. A running Java KCL 2.x or 3.x worker takes the
ResourceNotFoundException its next SubscribeToShard gets for the end of the
shard, with no children: it has the application checkpoint SHARD_END on
every open shard it reads, and no worker reads those shards from their
checkpoint again, restarted or not (docs/efo.md says what follows and how
to recover). A kcltool run --efo worker registers the consumer again and
reads on.`,
		Example: `  kcltool consumers deregister --stream orders --consumer-name billing-v1
  kcltool consumers deregister --stream orders --consumer-name billing-v1 --execute
  kcltool consumers deregister --stream orders --consumer-name reports --app reports-prod --execute`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.CheckOutput(o.Output); err != nil {
				return err
			}
			if err := cmdutil.RequireFlag("stream", o.Stream); err != nil {
				return err
			}
			if err := cmdutil.RequireFlag("consumer-name", o.ConsumerName); err != nil {
				return err
			}
			if o.Sample < 0 || (o.Sample == 0 && !o.Force) {
				return cmdutil.UsageErrorf("--sample must be positive: it is how long the application must be seen stopped (--force skips the requirement)")
			}
			return runConsumersDeregister(cmd.Context(), f, o)
		},
	}
	fl := c.Flags()
	fl.StringVar(&o.Stream, "stream", "", "stream name")
	fl.StringVar(&o.ConsumerName, "consumer-name", "", "the consumer to deregister")
	fl.StringVar(&o.App, "app", "", "the KCL application that uses the consumer, whose lease table says whether it runs (default: --consumer-name)")
	fl.StringVar(&o.Table, "table", "", "that application's lease table, when it set tableName (default: --app)")
	fl.BoolVar(&o.Execute, "execute", false, "deregister the consumer (without it: a dry run that only prints the plan)")
	fl.BoolVar(&o.Force, "force", false, "deregister even though the application is running or its lease table is missing")
	fl.DurationVar(&o.Sample, "sample", 10*time.Second, "with --execute: no lease counter may move for this long (KCL's failover time)")
	cmdutil.AddOutputFlag(c, &o.Output)
	return c
}

// appTable is the lease table of the application that uses the consumer.
func (o *consumersDeregisterOptions) appTable() string {
	switch {
	case o.Table != "":
		return o.Table
	case o.App != "":
		return o.App
	}
	return o.ConsumerName
}

func runConsumersDeregister(ctx context.Context, f *cmdutil.Factory, o *consumersDeregisterOptions) error {
	l, err := listConsumers(ctx, f, o.Stream)
	if err != nil {
		return err
	}
	c, ok := l.Find(o.ConsumerName)
	if !ok {
		return &cmdutil.HintError{
			Err:   &fanout.UnknownConsumerError{Stream: o.Stream, Name: o.ConsumerName, Existing: l.Names()},
			Hints: []string{"list them with: kcltool consumers ls --stream " + cmdutil.ShellQuote(o.Stream)},
		}
	}
	show := func(c fanout.StreamConsumer) error {
		return renderConsumers(f, o.Output, consumersView{stream: o.Stream, consumers: []fanout.StreamConsumer{c}, now: f.Clock.Now})
	}
	if c.Status == types.ConsumerStatusDeleting {
		if err := show(c); err != nil {
			return err
		}
		fmt.Fprintf(f.IO.ErrOut, "kcltool: nothing to do: consumer %q of stream %s is already DELETING\n", c.Name, o.Stream)
		return nil
	}
	creating := &fanout.NotActiveError{Name: c.Name, Status: string(types.ConsumerStatusCreating)}
	table := o.appTable()
	ddb, err := f.DynamoDB(ctx)
	if err != nil {
		return err
	}
	if !o.Execute {
		act, err := inspect.ReadAppActivity(ctx, ddb, table, 0, f.Clock)
		if err != nil {
			return cmdutil.ExplainAWS(err, f.AWSContext(table, ""))
		}
		if err := show(c); err != nil {
			return err
		}
		if c.Status == types.ConsumerStatusCreating {
			fmt.Fprintf(f.IO.ErrOut, "kcltool: warning: %v\n", creating)
		}
		warnAppActivity(f, o, act)
		fmt.Fprintf(f.IO.ErrOut, "kcltool: dry run: would deregister consumer %q of stream %s (%s); nothing changed. Add --execute to deregister it\n", c.Name, o.Stream, c.ARN)
		return nil
	}
	if c.Status == types.ConsumerStatusCreating {
		return creating
	}
	if o.Sample > 0 {
		fmt.Fprintf(f.IO.ErrOut, "kcltool: checking that the application is stopped: no lease counter of table %q may move for %s...\n", table, o.Sample)
		act, blocker, err := inspect.CheckRetired(ctx, ddb, table, o.Sample, f.Clock)
		if err != nil {
			return cmdutil.ExplainAWS(err, f.AWSContext(table, ""))
		}
		if err := refuseLiveApp(f, o, c, act, blocker); err != nil {
			return err
		}
	} else {
		// --force --sample 0 skips the check, not the warning: one read
		// still names who holds leases.
		act, err := inspect.ReadAppActivity(ctx, ddb, table, 0, f.Clock)
		if err != nil {
			return cmdutil.ExplainAWS(err, f.AWSContext(table, ""))
		}
		warnUnsampled(f, act)
	}
	kin, err := f.Kinesis(ctx)
	if err != nil {
		return err
	}
	after, err := fanout.Deregister(ctx, kin, c)
	if err != nil {
		var notActive *fanout.NotActiveError
		if errors.As(err, &notActive) {
			return err
		}
		return cmdutil.ExplainAWS(err, f.AWSContext("", o.Stream))
	}
	if err := show(after); err != nil {
		return err
	}
	fmt.Fprintf(f.IO.ErrOut, "kcltool: deregistered consumer %q of stream %s: it is %s, and Kinesis deletes it within seconds; no subscription can be made or renewed with it\n", c.Name, o.Stream, after.Status)
	return nil
}

// warnAppActivity says in the dry run what --execute would find: a
// missing table, or leases with owners (which may be a stopped fleet's),
// and what deregistering would do to those owners if they still run.
func warnAppActivity(f *cmdutil.Factory, o *consumersDeregisterOptions, act *inspect.AppActivity) {
	switch {
	case act.Missing:
		fmt.Fprintf(f.IO.ErrOut, "kcltool: warning: no lease table %q: nothing says whether an application uses consumer %q; --execute refuses unless --app or --table names the application's table, or --force\n", act.Table, o.ConsumerName)
	case len(act.Holders) > 0:
		fmt.Fprintf(f.IO.ErrOut, "kcltool: warning: lease table %q: %s held by %s (as read; a stopped worker's name stays on its leases): if the application is running, --execute refuses (stop it first, or --force)\n",
			act.Table, cmdutil.Plural(act.Leases, "lease"), listNames(act.Holders))
		fmt.Fprintf(f.IO.ErrOut, "kcltool: warning: if %s still run, deregistering ends their open shards: %s\n", listNames(act.Holders), shardEndHarm)
		fmt.Fprintf(f.IO.ErrOut, "kcltool: hint: see whether the owners renew: kcltool leases ls %s --sample\n", cmdutil.TableArgs(f, cmdutil.AppFlags{App: act.Table}))
	}
}

// warnUnsampled is --execute --force --sample 0's warning: nothing was
// sampled, so the lease holders as read are all it can name.
func warnUnsampled(f *cmdutil.Factory, act *inspect.AppActivity) {
	switch {
	case act.Missing:
		fmt.Fprintf(f.IO.ErrOut, "kcltool: --force: no lease table %q and --sample 0: nothing checked whether an application still reads with the consumer; deregistering anyway\n", act.Table)
	case len(act.Holders) > 0:
		fmt.Fprintf(f.IO.ErrOut, "kcltool: --force: --sample 0, so not checked whether the application runs: lease table %q has %s held by %s (as read); deregistering anyway\n",
			act.Table, cmdutil.Plural(act.Leases, "lease"), listNames(act.Holders))
		fmt.Fprintf(f.IO.ErrOut, "kcltool: warning: if %s still run, deregistering ends their open shards: %s\n", listNames(act.Holders), shardEndHarm)
	}
}

// shardEndHarm is what deregistering does to the running workers of a
// Java KCL application (KCL 2.x and 3.x, docs/efo.md): a
// ResourceNotFoundException from SubscribeToShard is, to the KCL, a shard
// that ended without children, whatever was not found.
const shardEndHarm = "each running Java KCL 2.x or 3.x worker takes the ResourceNotFoundException of its next SubscribeToShard for the end of the shard, " +
	"with no children, and checkpoints SHARD_END on every open shard it reads; no worker reads those shards from their checkpoints again, " +
	"restarted or not (docs/efo.md says how to recover). kcltool run --efo workers register the consumer again and read on"

// refuseLiveApp renders inspect's liveness rule: exit 3 when --execute
// must not go on (the application renewed leases during the sample, or its
// table is missing). With --force it warns instead, naming the workers
// that renewed: they are the ones the deregistration hurts.
func refuseLiveApp(f *cmdutil.Factory, o *consumersDeregisterOptions, c fanout.StreamConsumer, act *inspect.AppActivity, blocker inspect.Blocker) error {
	var fact, advice string
	switch blocker {
	case inspect.BlockedTableMissing:
		fact = fmt.Sprintf("no lease table %q, so nothing says whether an application still reads with consumer %q", act.Table, c.Name)
		advice = "name the application's table with --app or --table, or add --force if it is retired"
	case inspect.BlockedAppRunning:
		fact = fmt.Sprintf("the application of lease table %q is running: %s renewed %s in %s",
			act.Table, listNames(workersOr(act)), cmdutil.Plural(len(act.Moved), "lease"), act.Sample)
		advice = "stop it first, or add --force (its Java KCL 2.x and 3.x workers would then checkpoint SHARD_END on their open shards and stop reading them; see docs/efo.md)"
	default:
		return nil
	}
	if !o.Force {
		return &cmdutil.ExitError{Code: cmdutil.ExitProblems, Err: fmt.Errorf("consumer %q not deregistered: %s; %s", c.Name, fact, advice)}
	}
	fmt.Fprintf(f.IO.ErrOut, "kcltool: --force: %s; deregistering anyway\n", fact)
	if blocker == inspect.BlockedAppRunning {
		fmt.Fprintf(f.IO.ErrOut, "kcltool: warning: %s renewed leases during the sample, so they run: deregistering ends their open shards: %s\n", listNames(workersOr(act)), shardEndHarm)
	} else {
		fmt.Fprintf(f.IO.ErrOut, "kcltool: warning: if an application still reads with consumer %q, deregistering ends its open shards: %s\n", c.Name, shardEndHarm)
	}
	return nil
}

func workersOr(act *inspect.AppActivity) []string {
	if len(act.Workers) > 0 {
		return act.Workers
	}
	return []string{"a worker"}
}

// listNames names up to five and counts the rest.
func listNames(names []string) string {
	if len(names) > 5 {
		return strings.Join(names[:5], ", ") + fmt.Sprintf(" and %d more", len(names)-5)
	}
	return strings.Join(names, ", ")
}
