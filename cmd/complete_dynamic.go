package cmd

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/smithy-go/logging"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/fanout"
	"github.com/kcltool/kcltool/inspect"
)

// completionTimeout bounds a whole dynamic completion: loading the AWS
// configuration, every call it makes, and the answer. A shell waits for it
// on every Tab; past the deadline it offers nothing rather than a part.
const completionTimeout = 2 * time.Second

// awsLookup answers one dynamic completion from AWS.
type awsLookup func(ctx context.Context, cfg aws.Config, cmd *cobra.Command, toComplete string) ([]cobra.Completion, error)

// dynamicCompletion turns a lookup into a completion function that fails
// silently: no credentials, no region, an endpoint that refuses, hangs or
// denies all complete nothing, print nothing, and return within
// completionTimeout. File names are never offered instead.
func dynamicCompletion(f *cmdutil.Factory, lookup awsLookup) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		const directive = cobra.ShellCompDirectiveNoFileComp
		base := cmd.Context()
		if base == nil {
			base = context.Background()
		}
		ctx, cancel := context.WithTimeout(base, completionTimeout)
		defer cancel()
		// PersistentPreRunE, which applies KCLTOOL_<FLAG>, does not run for
		// cobra's __complete: apply it here, so KCLTOOL_APP, KCLTOOL_REGION
		// or KCLTOOL_ENDPOINT_URL count as they do for the command itself.
		if err := cmdutil.ApplyEnv(cmd, f.Getenv); err != nil {
			return nil, directive
		}
		cfg, err := completionAWSConfig(ctx, f)
		if err != nil {
			return nil, directive
		}
		comps, err := lookup(ctx, cfg, cmd, toComplete)
		if err != nil || ctx.Err() != nil {
			return nil, directive
		}
		return comps, directive
	}
}

// completionAWSConfig loads the standard credential chain with --region,
// --profile and --endpoint-url, as the commands do, but quiet and quick:
// one attempt per call (a refused connection is not worth a backoff within
// two seconds) and no SDK logger, whose warnings would reach the terminal.
func completionAWSConfig(ctx context.Context, f *cmdutil.Factory) (aws.Config, error) {
	opts := []func(*config.LoadOptions) error{
		config.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }),
		config.WithLogger(logging.Nop{}),
		config.WithClientLogMode(0),
	}
	if f.Region != "" {
		opts = append(opts, config.WithRegion(f.Region))
	}
	if f.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(f.Profile))
	}
	if f.EndpointURL != "" {
		opts = append(opts, config.WithBaseEndpoint(f.EndpointURL))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err == nil && cfg.Region == "" {
		err = fmt.Errorf("no region")
	}
	return cfg, err
}

// completeLeaseTables offers the account's lease tables, for --app and
// --table alike: the KCL names the table after the application.
func completeLeaseTables(ctx context.Context, cfg aws.Config, _ *cobra.Command, toComplete string) ([]cobra.Completion, error) {
	return inspect.LeaseTables(ctx, dynamodb.NewFromConfig(cfg), inspect.CatalogOptions{Prefix: toComplete})
}

// completeStreams offers the account's streams.
func completeStreams(ctx context.Context, cfg aws.Config, _ *cobra.Command, toComplete string) ([]cobra.Completion, error) {
	return inspect.StreamNames(ctx, kinesis.NewFromConfig(cfg), inspect.CatalogOptions{Prefix: toComplete})
}

// leaseNamesOnLine reads the lease table that --table or --app on the line
// names; with neither there is nothing to read.
func leaseNamesOnLine(ctx context.Context, cfg aws.Config, cmd *cobra.Command) ([]inspect.LeaseName, error) {
	table := flagValue(cmd, "table")
	if table == "" {
		table = flagValue(cmd, "app")
	}
	if table == "" {
		return nil, nil
	}
	return inspect.LeaseNames(ctx, dynamodb.NewFromConfig(cfg), table)
}

// completeShards offers the shard ids of the lease table's leases, those of
// --stream only when it is on the line. In a multi-stream table the same
// shard id is usually in several streams: it is offered once, described
// with its streams. A word with a colon completes full multi-stream lease
// keys ("account:stream:epoch:shardId"), which --shard accepts too.
func completeShards(ctx context.Context, cfg aws.Config, cmd *cobra.Command, toComplete string) ([]cobra.Completion, error) {
	names, err := leaseNamesOnLine(ctx, cfg, cmd)
	if err != nil {
		return nil, err
	}
	stream := flagValue(cmd, "stream")
	done, word := splitListWord(cmd.Flag("shard"), toComplete)
	type shard struct{ owners, streams []string }
	shards := map[string]*shard{}
	var order []string
	for _, n := range names {
		if !n.OfStream(stream) {
			continue
		}
		id := n.ShardID
		if strings.Contains(word, ":") {
			id = n.Key
		}
		s := shards[id]
		if s == nil {
			s = &shard{}
			shards[id] = s
			order = append(order, id)
		}
		s.owners = appendNew(s.owners, ownerOrNone(n.Owner))
		s.streams = appendNew(s.streams, n.StreamName())
	}
	sort.Strings(order)
	var comps []cobra.Completion
	for _, id := range order {
		s := shards[id]
		desc := strings.Join(s.owners, ", ")
		if len(s.streams) > 1 || s.streams[0] != "" {
			desc = strings.Join(s.streams, ", ") + ": " + desc
		}
		comps = append(comps, cobra.CompletionWithDesc(id, desc))
	}
	return listCompletions(done, word, comps), nil
}

// completeOwners offers the workers that hold leases, with how many.
func completeOwners(ctx context.Context, cfg aws.Config, cmd *cobra.Command, toComplete string) ([]cobra.Completion, error) {
	names, err := leaseNamesOnLine(ctx, cfg, cmd)
	if err != nil {
		return nil, err
	}
	count := map[string]int{}
	for _, n := range names {
		if n.Owner != "" {
			count[n.Owner]++
		}
	}
	owners := make([]string, 0, len(count))
	for o := range count {
		owners = append(owners, o)
	}
	sort.Strings(owners)
	var comps []cobra.Completion
	for _, o := range owners {
		if strings.HasPrefix(o, toComplete) {
			comps = append(comps, cobra.CompletionWithDesc(o, cmdutil.Plural(count[o], "lease")))
		}
	}
	return comps, nil
}

func ownerOrNone(owner string) string {
	if owner == "" {
		return "no owner"
	}
	return owner
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// flagValue is a flag's value as given on the line or by KCLTOOL_<FLAG>
// (ApplyEnv has run), "" when the command has no such flag.
func flagValue(cmd *cobra.Command, name string) string {
	if fl := cmd.Flag(name); fl != nil {
		return fl.Value.String()
	}
	return ""
}

// splitListWord splits the word being completed for a comma-separated list
// flag into the values already given ("a,b,") and the one being typed.
// Other flags take the whole word.
func splitListWord(fl *pflag.Flag, toComplete string) (done, word string) {
	if fl == nil || !strings.HasSuffix(fl.Value.Type(), "Slice") {
		return "", toComplete
	}
	i := strings.LastIndex(toComplete, ",")
	return toComplete[:i+1], toComplete[i+1:]
}

// listCompletions keeps the candidates that start with word and are not in
// done yet, each prefixed with done so the shell completes the whole word.
func listCompletions(done, word string, comps []cobra.Completion) []cobra.Completion {
	given := map[string]bool{}
	for _, v := range strings.Split(done, ",") {
		given[v] = true
	}
	var out []cobra.Completion
	for _, c := range comps {
		value, _, _ := strings.Cut(c, "\t")
		if strings.HasPrefix(value, word) && !given[value] {
			out = append(out, done+c)
		}
	}
	return out
}

// completeConsumers offers the consumers registered on the --stream on the
// line, each with its status; without --stream there is nothing to list.
func completeConsumers(ctx context.Context, cfg aws.Config, cmd *cobra.Command, toComplete string) ([]cobra.Completion, error) {
	stream := flagValue(cmd, "stream")
	if stream == "" {
		return nil, nil
	}
	l, err := fanout.ListStreamConsumers(ctx, kinesis.NewFromConfig(cfg), stream, fanout.ListOptions{})
	if err != nil {
		return nil, err
	}
	var comps []cobra.Completion
	for _, c := range l.Consumers {
		if strings.HasPrefix(c.Name, toComplete) {
			comps = append(comps, cobra.CompletionWithDesc(c.Name, string(c.Status)))
		}
	}
	return comps, nil
}
