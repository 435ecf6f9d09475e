package cmd

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
)

// Every operator command, given a multi-stream table with an item whose
// streamName is not account:stream:creationEpoch, reports the item as the
// command reports malformed items (a warning naming it, a malformed row, a
// critical finding) and never crashes. Before, the commands that split the
// name at ':' (checkpoint diff, shards lineage, doctor, checkpoint reset)
// panicked: exit 2 and a Go stack trace.
func TestOperatorCommandsReportMalformedStreamName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kin := emulator.Kinesis(t)
	stream := emulator.Name(t, "orders")
	emulator.CreateStream(t, kin, stream, 1)
	s, err := reshard.WithMultiStreamID(ctx, kin, reshard.Stream{Name: stream})
	if err != nil {
		t.Fatal(err)
	}
	const shard0, shard1 = "shardId-000000000000", "shardId-000000000001"
	good := leasecore.EncodeLease(leasecore.Lease{LeaseKey: s.LeaseKey(shard0), StreamName: s.ID, ShardID: shard0,
		LeaseCounter: 1, Checkpoint: leasecore.SequenceNumber{SequenceNumber: leasecore.TRIM_HORIZON}})

	for _, shape := range []struct{ name, streamName string }{
		{"plain stream name", stream},                         // no colon: the crash of the issue
		{"four parts", "000000000000:" + stream + ":1:extra"}, // one colon too many
		{"epoch 0", "000000000000:" + stream + ":0"},          // the KCL wants an epoch above 0
	} {
		t.Run(shape.name, func(t *testing.T) {
			t.Parallel()
			badKey := shape.streamName + ":" + shard1
			bad := leasecore.EncodeLease(leasecore.Lease{LeaseKey: badKey, ShardID: shard1,
				LeaseCounter: 1, Checkpoint: leasecore.SequenceNumber{SequenceNumber: leasecore.TRIM_HORIZON}})
			bad[leasecore.AttrStreamName] = &types.AttributeValueMemberS{Value: shape.streamName}
			table := seedTable(t, good, bad)

			for _, c := range []struct {
				name  string
				args  []string
				codes []int // the command's convention for a malformed item
			}{
				{"leases ls", []string{"leases", "ls", "--app", table}, []int{0}},
				{"leases owners", []string{"leases", "owners", "--app", table}, []int{0}},
				{"checkpoint diff", []string{"checkpoint", "diff", "--app", table, "--stream", stream}, []int{0}},
				{"shards lineage", []string{"shards", "lineage", "--app", table, "--stream", stream}, []int{0}},
				{"doctor", []string{"doctor", "--app", table, "--stream", stream, "--no-cloudwatch", "--failover-time", "1s", "--window", "1s"}, []int{3}},
				{"checkpoint reset", []string{"checkpoint", "reset", "--app", table, "--stream", stream, "--to", "trim-horizon"}, []int{0}},
				{"checkpoint export", []string{"checkpoint", "export", "--app", table}, []int{0}},
			} {
				out, errOut, code := runBinary(t, nil, c.args...)
				all := out + errOut
				if strings.Contains(errOut, "panic:") || strings.Contains(errOut, "goroutine ") {
					t.Errorf("%s crashed (exit %d):\n%s", c.name, code, errOut)
					continue
				}
				if !containsInt(c.codes, code) {
					t.Errorf("%s: exit %d, want %v\nstdout:\n%s\nstderr:\n%s", c.name, code, c.codes, out, errOut)
				}
				if !strings.Contains(all, badKey) || !strings.Contains(all, "streamName") {
					t.Errorf("%s does not report the malformed item %q and its streamName:\nstdout:\n%s\nstderr:\n%s", c.name, badKey, out, errOut)
				}
			}
		})
	}
}

func containsInt(set []int, v int) bool {
	for _, x := range set {
		if x == v {
			return true
		}
	}
	return false
}
