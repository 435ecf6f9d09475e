package doctor

import (
	"context"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/kcltool/kcltool/inspect"
	"github.com/kcltool/kcltool/leasecore"
)

// metricSpecs lists the series: DynamoDB's for the table and its indexes,
// Kinesis's iterator age (per shard where enhanced monitoring publishes it),
// and KCL's own in the application's namespace.
func (g *diagnosis) metricSpecs(ctx context.Context) []metricSpec {
	table := g.opt.Table
	var specs []metricSpec
	ddb := func(use, subject, name, stat string, dims ...[2]string) {
		specs = append(specs, metricSpec{use: use, subject: subject, namespace: "AWS/DynamoDB", name: name, stat: stat,
			dims: append([][2]string{{"TableName", table}}, dims...)})
	}
	for _, op := range leaseTableOps {
		ddb(mDDBThrottled, op, "ThrottledRequests", "Sum", [2]string{"Operation", op})
	}
	ddb(mDDBReadThrot, "", "ReadThrottleEvents", "Sum")
	ddb(mDDBWriteThrot, "", "WriteThrottleEvents", "Sum")
	ddb(mDDBConsumedWCU, "", "ConsumedWriteCapacityUnits", "Sum")
	ddb(mDDBConsumedRCU, "", "ConsumedReadCapacityUnits", "Sum")
	if g.d.desc != nil {
		for _, gsi := range g.d.desc.GlobalSecondaryIndexes {
			name := aws.ToString(gsi.IndexName)
			idx := [2]string{"GlobalSecondaryIndexName", name}
			ddb(mDDBReadThrot, name, "ReadThrottleEvents", "Sum", idx)
			ddb(mDDBWriteThrot, name, "WriteThrottleEvents", "Sum", idx)
			ddb(mDDBConsumedWCU, name, "ConsumedWriteCapacityUnits", "Sum", idx)
		}
	}
	specs = append(specs, g.iteratorAgeSpecs(ctx)...)
	specs = append(specs, g.subscriptionSpecs()...)
	return append(specs, g.kclSpecs()...)
}

// iteratorAgeSpecs reads IteratorAgeMilliseconds per shard when the
// stream's enhanced monitoring publishes it, and the stream-level
// GetRecords.IteratorAgeMilliseconds otherwise.
func (g *diagnosis) iteratorAgeSpecs(ctx context.Context) []metricSpec {
	var specs []metricSpec
	for _, stream := range g.streamNames() {
		shards := g.openShards(stream)
		if len(shards) > 0 && g.shardLevelIteratorAge(ctx, stream) {
			for _, sh := range shards {
				specs = append(specs, metricSpec{use: mIteratorAge, subject: stream + "/" + sh, namespace: "AWS/Kinesis",
					name: "IteratorAgeMilliseconds", stat: "Maximum", dims: [][2]string{{"StreamName", stream}, {"ShardId", sh}}})
			}
			continue
		}
		specs = append(specs, metricSpec{use: mIteratorAge, subject: stream, namespace: "AWS/Kinesis",
			name: "GetRecords.IteratorAgeMilliseconds", stat: "Maximum", dims: [][2]string{{"StreamName", stream}}})
	}
	return specs
}

func (g *diagnosis) shardLevelIteratorAge(ctx context.Context, stream string) bool {
	if g.d.kin == nil {
		return false
	}
	out, err := g.describeStream(ctx, stream)
	if err != nil || out.StreamDescriptionSummary == nil {
		return false
	}
	for _, em := range out.StreamDescriptionSummary.EnhancedMonitoring {
		for _, m := range em.ShardLevelMetrics {
			if m == "IteratorAgeMilliseconds" || m == "ALL" {
				return true
			}
		}
	}
	return false
}

// streamNames are the streams the table consumes: --stream, or the
// streams a multi-stream table names.
func (g *diagnosis) streamNames() []string {
	if g.lag != nil {
		var names []string
		for _, r := range g.lag.Rows {
			if !slices.Contains(names, r.Stream) {
				names = append(names, r.Stream)
			}
		}
		return names
	}
	if g.opt.Stream != "" {
		return []string{g.opt.Stream}
	}
	ss, err := inspect.StreamsOf(g.last.leases, "")
	if err != nil {
		return nil
	}
	var names []string
	for _, s := range ss {
		names = append(names, s.Name)
	}
	return names
}

// openShards are the stream's open shards, when the stream was listed.
func (g *diagnosis) openShards(stream string) []string {
	if g.lag == nil {
		return nil
	}
	var out []string
	for _, r := range g.lag.Rows {
		if r.Stream == stream && r.Shard != nil && r.Shard.Open {
			out = append(out, r.ShardID)
		}
	}
	return out
}

// kclSpecs are KCL's own metrics (docs/kcl-compat.md, CloudWatch metrics) in
// the application's namespace, with the dimensions KCL publishes them under:
// Operation plus WorkerIdentifier for the lease metrics, plus ShardId for
// per-shard lag, and Operation alone when an application narrows
// metricsEnabledDimensions.
func (g *diagnosis) kclSpecs() []metricSpec {
	ns := g.opt.App
	op := func(o string) [2]string { return [2]string{"Operation", o} }
	var specs []metricSpec
	add := func(use, subject, name, stat string, dims ...[2]string) {
		specs = append(specs, metricSpec{use: use, subject: subject, namespace: ns, name: name, stat: stat, dims: dims})
	}
	workers := g.knownWorkers()
	for _, m := range []struct{ use, name, op string }{
		{mKCLLost, "LostLeases", "RenewAllLeases"},
		{mKCLTaken, "TakenLeases", "TakeLeases"},
		{mKCLReassigned, "NumOfLeasesReassignment", "LeaseAssignmentManager"},
	} {
		add(m.use, "", m.name, "Sum", op(m.op))
		for _, w := range workers {
			add(m.use, w, m.name, "Sum", op(m.op), [2]string{"WorkerIdentifier", w})
		}
	}
	add(mKCLAppLag, "", "MillisBehindLatest", "Maximum", op("ApplicationTracker"))
	for _, l := range g.last.leases {
		// Multi-stream KCL adds a StreamId dimension; per-shard lag is read
		// for single-stream tables only.
		if l.StreamName != "" || l.Checkpoint.IsShardEnd() {
			continue
		}
		if _, _, multi := leasecore.ParseMultiStreamKey(l.LeaseKey); multi {
			continue
		}
		add(mKCLShardLag, l.LeaseKey, "MillisBehindLatest", "Maximum", op("ProcessTask"), [2]string{"ShardId", l.LeaseKey})
		// 0/1 per GetRecords call (KCL and kcltool run alike): tells a
		// shard whose reads fail from one whose handler fails.
		add(mKCLReadSuccess, l.LeaseKey, "KinesisDataFetcher.getRecords.Success", "Average", op("ProcessTask"), [2]string{"ShardId", l.LeaseKey})
	}
	return specs
}

// knownWorkers are every owner seen in the window and every worker with a
// KCL 3.x worker-metrics item.
func (g *diagnosis) knownWorkers() []string {
	set := map[string]bool{}
	for name := range g.view.owners {
		set[name] = true
	}
	for _, m := range g.kcl3.metrics {
		set[m.WorkerID] = true
	}
	return slices.Sorted(maps.Keys(set))
}
