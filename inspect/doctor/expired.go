package doctor

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/kcltool/kcltool/reshard"
)

// checkExpired reports shards that lost records at a stream edge, from the
// marks kcltool run leaves on them:
//
//   - expired (ResourceNotFound): the shard's data expired before it was
//     read to its end; run finished it at SHARD_END and started its children
//     at TRIM_HORIZON (reshard.AttrExpired on the parent,
//     reshard.AttrParentExpired on each child);
//   - trimmed: a closed shard's checkpoint was older than its trim horizon
//     (GetShardIterator refused it); the records between the checkpoint and
//     the trim horizon were lost, and run read the rest of the shard again
//     from TRIM_HORIZON before its children (reshard.AttrTrimmed,
//     reshard.AttrParentTrimmed).
//
// The children's marks outlive the parent's lease, which the cleanup
// deletes.
func checkExpired(fc *facts) (out []Finding) {
	expired := edgeLoss{parents: map[string]string{}, keys: map[string]string{}, children: map[string][]string{}}
	trimmed := edgeLoss{parents: map[string]string{}, keys: map[string]string{}, children: map[string][]string{}}
	for _, l := range fc.last.leases {
		expired.read(l.ShardIDOrKey(), l.LeaseKey, attrS(l.Extra, reshard.AttrExpired), attrS(l.Extra, reshard.AttrParentExpired))
		trimmed.read(l.ShardIDOrKey(), l.LeaseKey, attrS(l.Extra, reshard.AttrTrimmed), attrS(l.Extra, reshard.AttrParentTrimmed))
	}
	if len(expired.parents) == 0 && len(trimmed.parents) == 0 {
		return
	}
	var lines, ids, summary []string
	for _, id := range slices.Sorted(maps.Keys(expired.parents)) {
		line := id + ": data expired before it was read to its end"
		if at, why, ok := strings.Cut(expired.parents[id], " "); ok {
			line += fmt.Sprintf(" (finished at %s: %s)", at, why)
		}
		if cs := expired.children[id]; len(cs) > 0 {
			sort.Strings(cs)
			line += "; children started from TRIM_HORIZON: " + strings.Join(cs, ", ")
		} else if key := expired.keys[id]; key != "" {
			// Without children the cleanup never deletes it.
			line += fmt.Sprintf("; no child shard is left, so its lease stays until deleted: aws dynamodb delete-item --table-name %s --key '{\"leaseKey\":{\"S\":\"%s\"}}'", fc.opt.Table, key)
		}
		lines, ids = append(lines, line), append(ids, id)
	}
	if n := len(expired.parents); n > 0 {
		summary = append(summary, fmt.Sprintf("%s expired before %s read to the end, and records were lost", plural(n, "shard"), map[bool]string{true: "it was", false: "they were"}[n == 1]))
	}
	for _, id := range slices.Sorted(maps.Keys(trimmed.parents)) {
		line := id + ": its checkpoint was older than its trim horizon, so the records before the trim horizon were lost; the rest of the shard was read again from TRIM_HORIZON, before its children"
		if at, rest, ok := strings.Cut(trimmed.parents[id], " "); ok {
			seq, why, _ := strings.Cut(rest, " ")
			line += fmt.Sprintf(" (refused checkpoint %s at %s: %s)", seq, at, why)
		}
		if cs := trimmed.children[id]; len(cs) > 0 {
			sort.Strings(cs)
			line += "; children: " + strings.Join(cs, ", ")
		}
		lines = append(lines, line)
		if _, dup := expired.parents[id]; !dup {
			ids = append(ids, id)
		}
	}
	if n := len(trimmed.parents); n > 0 {
		summary = append(summary, map[bool]string{
			true:  "1 shard's checkpoint was older than its trim horizon, and the records before the trim horizon were lost",
			false: fmt.Sprintf("%d shards' checkpoints were older than their trim horizons, and the records before the trim horizons were lost", n),
		}[n == 1])
	}
	sort.Strings(ids)
	out = append(out, Finding{
		ID: FindExpiredShard, Severity: SeverityWarn,
		Summary: fmt.Sprintf("%s: %s", strings.Join(summary, "; "), listShort(ids)),
		Evidence: Evidence{Lines: lines, Shards: ids, Values: map[string]float64{
			"shards": float64(len(ids)), "expiredShards": float64(len(expired.parents)), "trimmedShards": float64(len(trimmed.parents))}},
		Cause: "the shard was not read within the stream's retention period (the consumer was stopped, or fell behind by more than the retention): either Kinesis answered ResourceNotFound for it, and kcltool run finished it at SHARD_END and started its children from TRIM_HORIZON; or Kinesis refused a closed shard's checkpoint as older than its trim horizon (InvalidArgumentException from GetShardIterator), and kcltool run read the shard again from TRIM_HORIZON to its end before its children, losing only the records before the trim horizon",
		Fix:   "find why the shard fell behind (kcltool checkpoint diff, this report's lag findings) and raise the retention if needed (aws kinesis increase-stream-retention-period); the records that expired cannot be read again",
	})
	return
}

// edgeLoss gathers one kind of mark: the parents' values by shard id, their
// lease keys while they exist, and the children naming each parent.
type edgeLoss struct {
	parents  map[string]string
	keys     map[string]string
	children map[string][]string
}

func (e edgeLoss) read(id, key, own, parent string) {
	if own != "" {
		e.parents[id], e.keys[id] = own, key
	}
	if parent != "" {
		p, _, _ := strings.Cut(parent, " ")
		e.children[p] = append(e.children[p], id)
		if _, ok := e.parents[p]; !ok {
			e.parents[p] = ""
		}
	}
}
