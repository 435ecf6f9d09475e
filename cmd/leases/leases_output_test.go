package leases

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/kcltool/kcltool/inspect"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
)

// leaseRowsForOutput are leases with every field set, none set, and
// characters JSON escapes, as rows of a listing.
func leaseRowsForOutput() []inspect.LeaseRow {
	full := leasecore.Lease{
		LeaseKey: "123456789012:orders:1700000000:shardId-000000000001", LeaseOwner: "worker-<1>", LeaseCounter: 42,
		OwnerSwitchesSinceCheckpoint: 3,
		Checkpoint:                   leasecore.SequenceNumber{SequenceNumber: "49590338271490256608559692538361571095921575989136588898", SubSequenceNumber: 7},
		PendingCheckpoint:            &leasecore.SequenceNumber{SequenceNumber: "49590338271490256608559692538361571095921575989136588899", SubSequenceNumber: 8},
		PendingCheckpointState:       []byte("state"), ParentShardIDs: []string{"shardId-000000000000"},
		ChildShardIDs: []string{"shardId-000000000002", "shardId-000000000003"}, StartingHashKey: "0",
		EndingHashKey: "340282366920938463463374607431768211455", CheckpointOwner: "worker-&2", EntityType: "LEASE",
		StreamName: "123456789012:orders:1700000000", ShardID: "shardId-000000000001",
	}
	tp := 12.5
	full.ThroughputKBps = &tp
	renewals := int64(5)
	return []inspect.LeaseRow{
		{Lease: &full, State: inspect.StateWaitingOnParent, BlockedBy: []reshard.Blocker{{ShardID: "shardId-000000000000"}}, RenewalsSeen: &renewals},
		{Lease: &leasecore.Lease{LeaseKey: "shardId-000000000009", Checkpoint: leasecore.SequenceNumber{SequenceNumber: "TRIM_HORIZON"}}, State: inspect.StateUnassigned},
		{Lease: &leasecore.Lease{LeaseKey: "a:b:1:shardId-7", LeaseOwner: "w\u2028\"é\"", Checkpoint: leasecore.SequenceNumber{SequenceNumber: "LATEST"}}, State: inspect.StateOwned},
	}
}

// TestLeasesCSVFromTheJSONRow: every CSV column that is a JSON key holds
// the JSON value (null as an empty field, a list joined with ";"), so CSV,
// JSON and the table come from one row of each lease; shardId included, in
// single-stream tables too (it was null in JSON there, the key in CSV).
func TestLeasesCSVFromTheJSONRow(t *testing.T) {
	rows := leaseRowsForOutput()
	var js, cs bytes.Buffer
	if err := writeLeasesJSON(&js, rows); err != nil {
		t.Fatal(err)
	}
	if err := writeLeasesCSV(&cs, rows); err != nil {
		t.Fatal(err)
	}
	var objs []map[string]any
	if err := json.Unmarshal(js.Bytes(), &objs); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&cs).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(rows)+1 || strings.Join(recs[0], ",") != strings.Join(LeaseCSVColumns, ",") {
		t.Fatalf("CSV header or record count wrong: %q", recs)
	}
	for i, rec := range recs[1:] {
		for c, col := range LeaseCSVColumns {
			want := ""
			switch v := objs[i][col].(type) {
			case nil:
			case string:
				want = v
			case float64:
				want = strconv.FormatFloat(v, 'f', -1, 64)
			case []any:
				var parts []string
				for _, p := range v {
					parts = append(parts, p.(string))
				}
				want = strings.Join(parts, ";")
			}
			if rec[c] != want {
				t.Errorf("lease %d, column %s: CSV %q, JSON says %q", i, col, rec[c], want)
			}
		}
	}
}

// A value encoding/json refuses fails the command instead of printing a
// line of bad JSON.
func TestLeasesJSONRefusesNaN(t *testing.T) {
	rows := leaseRowsForOutput()
	nan := math.NaN()
	rows[1].ThroughputKBps = &nan
	var b bytes.Buffer
	if err := writeLeasesJSON(&b, rows); err == nil {
		t.Fatalf("NaN throughput written: %s", b.String())
	}
}
