package doctor

import (
	"errors"
	"fmt"

	"github.com/kcltool/kcltool/leasecore"
)

// checkMalformed reports items no KCL worker can read, one finding per
// item, each with the command that repairs it. It is critical: the item's
// shard is read by no worker until it is repaired (takers skip it, shard
// sync cannot create it again), and a KCL 2.x worker fails its whole lease
// listing on it.
func checkMalformed(fc *facts) (out []Finding) {
	seen := map[string]bool{}
	for _, item := range fc.last.malformedItems {
		rep := RepairLeaseItem(fc.opt.Table, item)
		seen[rep.Key] = true
		raw, _ := leasecore.MarshalItemJSON(item)
		lines := []string{rep.Problem, "item: " + string(raw)}
		var fix string
		if rep.Repaired != nil {
			lines = append(lines, rep.Changes...)
			fix = "write the item back with the KCL's types; the write applies only if the item still exists with the leaseCounter and the attributes it repairs as read here (if it fails with ConditionalCheckFailedException, the item changed: run doctor again):\n    " + rep.Command
		} else {
			lines = append(lines, "cannot repair: "+rep.Unrecoverable)
			fix = "the value cannot be recovered from the item: write the attribute by hand in the KCL's type (docs/kcl-compat.md, Attributes), for a checkpoint the sequence number the shard was processed up to; or delete the item so that the next shard sync creates the lease again at the application's initial position (conditional on the item being unchanged):\n    " + rep.Command
		}
		out = append(out, Finding{
			ID: FindMalformed, Severity: SeverityCritical,
			Summary:  fmt.Sprintf("lease %q cannot be read as a KCL lease: no worker reads its shard", rep.Key),
			Evidence: Evidence{Lines: lines, Shards: []string{rep.Key}, Values: map[string]float64{"items": 1}},
			Cause:    "the item was written by hand or by a tool that does not follow the KCL serializer; takers skip it and shard sync cannot create the lease again, so its shard stays unread, and KCL 2.x workers fail their whole lease listing on it (docs/kcl-compat.md, KCL 3.x items)",
			Fix:      fix,
		})
	}
	// Items without a raw copy (none in practice): still reported.
	for _, m := range fc.last.malformed {
		var me *leasecore.MalformedError
		if errors.As(m, &me) && seen[me.LeaseKey] {
			continue
		}
		out = append(out, Finding{
			ID: FindMalformed, Severity: SeverityCritical,
			Summary:  "a lease item cannot be read as a KCL lease",
			Evidence: Evidence{Lines: []string{m.Error()}, Values: map[string]float64{"items": 1}},
			Cause:    "an item was written by hand or by a tool that does not follow the KCL serializer",
			Fix:      "inspect it with aws dynamodb get-item and write it back in the KCL's types, or delete it",
		})
	}
	return
}
