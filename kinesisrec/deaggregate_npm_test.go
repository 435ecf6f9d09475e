package kinesisrec

import (
	"bytes"
	"crypto/md5"
	"encoding/json"
	"math/big"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/kcltool/kcltool/leasecore"
)

// npmAggregates is what testdata/kpl_agg.js prints.
type npmAggregates struct {
	Aggregates []struct {
		Data         []byte `json:"data"`
		PartitionKey string `json:"partitionKey"`
		Records      []struct {
			PartitionKey    string `json:"partitionKey"`
			ExplicitHashKey string `json:"explicitHashKey"`
			Data            []byte `json:"data"`
		} `json:"records"`
	} `json:"aggregates"`
}

// loadNPMAggregates runs the aws-kinesis-agg producer script. Its output is
// made by code kcltool did not write, so it checks our reading of the
// format against a real producer's writing of it.
func loadNPMAggregates(t *testing.T) npmAggregates {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed: this test builds KPL aggregates with the npm package aws-kinesis-agg and needs Node.js (and `npm ci` in the repository root)")
	}
	script, err := filepath.Abs(filepath.Join("testdata", "kpl_agg.js"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, script)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, stderr.String())
	}
	var aggs npmAggregates
	if err := json.Unmarshal(out, &aggs); err != nil {
		t.Fatalf("kpl_agg.js output: %v", err)
	}
	if len(aggs.Aggregates) < 4 {
		t.Fatalf("kpl_agg.js made %d aggregates; the test needs several", len(aggs.Aggregates))
	}
	return aggs
}

func TestDeaggregateNPMProducer(t *testing.T) {
	aggs := loadNPMAggregates(t)
	var in []Record
	for i, a := range aggs.Aggregates {
		if !bytes.HasPrefix(a.Data, kplMagic) {
			t.Fatalf("aggregate %d does not start with the KPL magic", i)
		}
		in = append(in, kinesisRecord(strconv.Itoa(1000+i), a.Data))
	}
	// The explicit hash key the script gives partition key "delta".
	const deltaKey = "170141183460469231731687303715884105728"
	sawEHK, sawEmpty := false, false
	for _, tc := range []struct {
		name string
		hr   leasecore.HashRange
	}{
		{"whole key space", leasecore.HashRange{}},
		{"lower half", mustRange(t, "0", lowerHalfEnd)},
		{"upper half", mustRange(t, upperHalfStart, topHashKey)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, rep := Deaggregate(in, tc.hr)
			var want []Record
			dropped := 0
			for i, a := range aggs.Aggregates {
				var subs []Record
				inRange := true
				for j, r := range a.Records {
					// The hash key computed here, independently of hashrange.go.
					key := new(big.Int)
					if r.ExplicitHashKey != "" {
						key.SetString(r.ExplicitHashKey, 10)
						sawEHK = sawEHK || r.ExplicitHashKey == deltaKey
					} else {
						sum := md5.Sum([]byte(r.PartitionKey))
						key.SetBytes(sum[:])
					}
					if !tc.hr.Contains(key) {
						inRange = false
					}
					sawEmpty = sawEmpty || len(r.Data) == 0
					subs = append(subs, Record{
						Data: r.Data, PartitionKey: r.PartitionKey, ExplicitHashKey: r.ExplicitHashKey,
						SequenceNumber: in[i].SequenceNumber, SubSequenceNumber: int64(j),
						ApproximateArrivalTimestamp: arrival, ShardID: in[i].ShardID,
					})
				}
				if inRange {
					want = append(want, subs...)
				} else {
					dropped++
				}
			}
			assertRecords(t, got, want)
			if rep.Aggregates != len(in) || rep.OutOfRange != dropped || len(rep.Broken) != 0 {
				t.Errorf("report = %+v, want %d aggregates, %d out of range", rep, len(in), dropped)
			}
			if tc.name != "whole key space" && dropped == 0 {
				t.Errorf("no aggregate fell outside %s: the script's keys no longer exercise the filter", tc.name)
			}
		})
	}
	if !sawEHK || !sawEmpty {
		t.Errorf("script output lacks an explicit hash key (%v) or an empty record (%v)", sawEHK, sawEmpty)
	}
}
