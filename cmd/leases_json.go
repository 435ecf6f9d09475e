package cmd

import (
	"encoding/json"
	"strconv"
)

// jsonAppender is implemented by JSON line items that can write themselves
// without reflection. It is kept because it still pays: encoding/json calls
// optString's MarshalJSON for a dozen fields of every lease and compacts
// each result, for every lease. The gain is small next to the Scan, so it
// is checked again with make bench: docs/benchmarks.md holds the figures and
// says when to drop this for encoding/json.
// The bytes must equal json.Marshal's, which the tests check field by field.
// The error is json.Marshal's error for the same value, so a value it
// refuses (a NaN float) still fails the command instead of printing bad JSON.
type jsonAppender interface {
	appendJSON(b []byte) ([]byte, error)
}

// appendJSON appends exactly what json.Marshal(j) returns: the struct's field
// order, null for an empty optString, a nil list or a nil pointer, and
// encoding/json's escaping. Keep it in step with the struct when a field is
// added.
func (j *leaseJSON) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"leaseKey":`...)
	b = appendJSONString(b, j.LeaseKey)
	b = append(b, `,"leaseOwner":`...)
	b = appendOptString(b, j.LeaseOwner)
	b = append(b, `,"leaseCounter":`...)
	b = strconv.AppendInt(b, j.LeaseCounter, 10)
	b = append(b, `,"ownerSwitchesSinceCheckpoint":`...)
	b = strconv.AppendInt(b, j.OwnerSwitchesSinceCheckpoint, 10)
	b = append(b, `,"checkpoint":`...)
	b = appendJSONString(b, j.Checkpoint)
	b = append(b, `,"checkpointSubSequenceNumber":`...)
	b = strconv.AppendInt(b, j.CheckpointSubSequenceNumber, 10)
	b = append(b, `,"pendingCheckpoint":`...)
	b = appendOptString(b, j.PendingCheckpoint)
	b = append(b, `,"pendingCheckpointSubSequenceNumber":`...)
	b = appendOptInt(b, j.PendingCheckpointSubSequenceNumber)
	b = append(b, `,"pendingCheckpointState":`...)
	b = appendOptString(b, j.PendingCheckpointState)
	b = append(b, `,"parentShardId":`...)
	b = appendJSONStrings(b, j.ParentShardID)
	b = append(b, `,"childShardIds":`...)
	b = appendJSONStrings(b, j.ChildShardIDs)
	b = append(b, `,"startingHashKey":`...)
	b = appendOptString(b, j.StartingHashKey)
	b = append(b, `,"endingHashKey":`...)
	b = appendOptString(b, j.EndingHashKey)
	b = append(b, `,"throughputKBps":`...)
	if j.ThroughputKBps == nil {
		b = append(b, "null"...)
	} else {
		// Rare, and encoding/json's float form (exponent cut-offs, "e-7"
		// not "e-07", NaN refused) is not worth restating here.
		f, err := json.Marshal(*j.ThroughputKBps)
		if err != nil {
			return b, err
		}
		b = append(b, f...)
	}
	b = append(b, `,"checkpointOwner":`...)
	b = appendOptString(b, j.CheckpointOwner)
	b = append(b, `,"entityType":`...)
	b = appendOptString(b, j.EntityType)
	b = append(b, `,"streamName":`...)
	b = appendOptString(b, j.StreamName)
	b = append(b, `,"shardId":`...)
	b = appendOptString(b, j.ShardID)
	b = append(b, `,"state":`...)
	b = appendJSONString(b, j.State)
	b = append(b, `,"blockedBy":`...)
	b = appendJSONStrings(b, j.BlockedBy)
	b = append(b, `,"renewalsSeen":`...)
	b = appendOptInt(b, j.RenewalsSeen)
	return append(b, '}'), nil
}

func appendOptString(b []byte, s optString) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return appendJSONString(b, string(s))
}

func appendOptInt(b []byte, n *int64) []byte {
	if n == nil {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, *n, 10)
}

// appendJSONString quotes s as json.Marshal does. Lease keys, owners and
// sequence numbers are plain ASCII, so they are copied as they are; anything
// else goes to encoding/json, which owns the rules for HTML characters,
// U+2028/U+2029 and invalid UTF-8.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !jsonPlain[s[i]] {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// jsonPlain marks the bytes json.Marshal copies into a string unchanged and
// appendJSONString may copy too: printable ASCII except the quote, the
// backslash and the HTML characters < > &. One table lookup a byte replaces
// a chain of comparisons in the loop every string of every lease goes
// through.
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c <= 0x7e; c++ {
		t[c] = true
	}
	for _, c := range `"\<>&` {
		t[c] = false
	}
	return t
}()

// appendJSONStrings writes a list as json.Marshal does: null when nil.
func appendJSONStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, s)
	}
	return append(b, ']')
}
