package doctor

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kcltool/kcltool/reshard"
)

// checkExpired reports shards whose data expired before they were read to
// their end (ResourceNotFound, or a closed shard's checkpoint older than its
// trim horizon): kcltool run finished them at SHARD_END and started their
// children at TRIM_HORIZON, and marked both (reshard.AttrExpired on the
// parent, reshard.AttrParentExpired on each child). The children's marks
// outlive the parent's lease, which the cleanup deletes.
func (g *diagnosis) checkExpired() {
	parents := map[string]string{} // expired shard id -> what is known
	keys := map[string]string{}    // expired shard id -> its lease key, while it exists
	children := map[string][]string{}
	for _, l := range g.last.leases {
		if v := attrS(l.Extra, reshard.AttrExpired); v != "" {
			parents[l.ShardIDOrKey()] = v
			keys[l.ShardIDOrKey()] = l.LeaseKey
		}
		if v := attrS(l.Extra, reshard.AttrParentExpired); v != "" {
			parent, _, _ := strings.Cut(v, " ")
			children[parent] = append(children[parent], l.ShardIDOrKey())
			if _, ok := parents[parent]; !ok {
				parents[parent] = ""
			}
		}
	}
	if len(parents) == 0 {
		return
	}
	ids := sortedKeys(parents)
	var lines []string
	for _, id := range ids {
		line := id + ": data expired before it was read to its end"
		if at, why, ok := strings.Cut(parents[id], " "); ok {
			line += fmt.Sprintf(" (finished at %s: %s)", at, why)
		}
		if cs := children[id]; len(cs) > 0 {
			sort.Strings(cs)
			line += "; children started from TRIM_HORIZON: " + strings.Join(cs, ", ")
		} else if key := keys[id]; key != "" {
			// Without children the cleanup never deletes it.
			line += fmt.Sprintf("; no child shard is left, so its lease stays until deleted: aws dynamodb delete-item --table-name %s --key '{\"leaseKey\":{\"S\":\"%s\"}}'", g.opt.Table, key)
		}
		lines = append(lines, line)
	}
	g.add(Finding{
		ID: FindExpiredShard, Severity: SeverityWarn,
		Summary:  fmt.Sprintf("%s expired before %s read to the end, and records were lost: %s", plural(len(ids), "shard"), map[bool]string{true: "it was", false: "they were"}[len(ids) == 1], listShort(ids)),
		Evidence: Evidence{Lines: lines, Shards: ids, Values: map[string]float64{"shards": float64(len(ids))}},
		Cause:    "the shard was not read within the stream's retention period (the consumer was stopped, or fell behind by more than the retention), so Kinesis answered ResourceNotFound for it, or refused its checkpoint as older than the trim horizon (InvalidArgumentException from GetShardIterator, for a closed shard); kcltool run finished it at SHARD_END and started its children from TRIM_HORIZON",
		Fix:      "find why the shard fell behind (kcltool checkpoint diff, this report's lag findings) and raise the retention if needed (aws kinesis increase-stream-retention-period); the records that expired cannot be read again",
	})
}
