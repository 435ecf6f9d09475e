package reset

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
)

// pickStream finds the stream a reset is about and its leases. A
// single-stream table's leases all belong to the named stream. A
// multi-stream table names its streams in the leases ("account:name:epoch");
// stream may be the name or the full identifier.
func pickStream(leases []leasecore.Lease, stream string) (reshard.Stream, []leasecore.Lease, error) {
	streams, err := reshard.TableStreams(leases)
	if err != nil {
		return reshard.Stream{}, nil, &InputError{Err: err}
	}
	if len(streams) == 0 {
		return reshard.Stream{Name: stream}, leases, nil
	}
	var match []reshard.Stream
	var all, matchIDs []string
	for _, s := range streams {
		all = append(all, s.ID)
		if s.ID == stream || s.Name == stream {
			match = append(match, s)
			matchIDs = append(matchIDs, s.ID)
		}
	}
	switch len(match) {
	case 0:
		return reshard.Stream{}, nil, inputErrorf("no leases of stream %q in this multi-stream lease table (its streams: %s)", stream, strings.Join(all, ", "))
	case 1:
	default:
		return reshard.Stream{}, nil, inputErrorf("several streams named %q in this lease table (%s): pass %s with the full identifier", stream, strings.Join(matchIDs, ", "), SettingStream)
	}
	return match[0], reshard.LeasesOfStream(leases, match[0]), nil
}

// selectScope narrows leases to the --shard list (shard ids or lease keys).
// Every name must match a lease; g (nil when the stream was not read) makes
// the error say whether the shard exists without a lease.
func selectScope(leases []leasecore.Lease, shards []string, g *reshard.Graph, malformed []error) ([]leasecore.Lease, error) {
	if len(shards) == 0 {
		return leases, nil
	}
	picked := map[string]bool{}
	var out []leasecore.Lease
	var problems []string
	for _, s := range shards {
		found := false
		for _, l := range leases {
			if l.ShardIDOrKey() == s || l.LeaseKey == s {
				found = true
				if !picked[l.LeaseKey] {
					picked[l.LeaseKey] = true
					out = append(out, l)
				}
			}
		}
		if !found {
			problems = append(problems, unknownShard(s, g, malformed))
		}
	}
	if len(problems) > 0 {
		return nil, inputErrorf("%s", strings.Join(problems, "; "))
	}
	return out, nil
}

func unknownShard(s string, g *reshard.Graph, malformed []error) string {
	for _, m := range malformed {
		if me, ok := m.(*leasecore.MalformedError); ok && me.LeaseKey == s {
			return "lease " + s + " is malformed (" + m.Error() + "): kcltool does not write it"
		}
	}
	if g != nil && g.Has(s) {
		return "shard " + s + " has no lease (the application has not reached it, or its lease was cleaned up after SHARD_END; reset one of its descendants to replay it)"
	}
	if g != nil {
		return "unknown shard " + s + ": the lease table has no lease for it and the stream has no such shard"
	}
	return "unknown shard " + s + ": the lease table has no lease for it"
}

// itemsByKey indexes raw items by leaseKey.
func itemsByKey(items []map[string]types.AttributeValue) map[string]map[string]types.AttributeValue {
	m := make(map[string]map[string]types.AttributeValue, len(items))
	for _, it := range items {
		m[leasecore.ItemKey(it)] = it
	}
	return m
}

// tableEntityType is what a lease kcltool creates carries: "LEASE" when the
// table's leases were written by KCL 3.5+ (which sets it on every lease it
// creates), nothing otherwise, so a 2.x table keeps looking like one.
func tableEntityType(leases []leasecore.Lease) string {
	for _, l := range leases {
		if l.EntityType == leasecore.EntityTypeLease {
			return leasecore.EntityTypeLease
		}
	}
	return ""
}
