package leasecore

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// FuzzDecodeLease feeds DynamoDB JSON through UnmarshalItemJSON and
// DecodeLease. Properties:
//   - nothing panics, and decode errors are always typed;
//   - a decoded lease re-encodes to an item that decodes to an equal Lease;
//   - the encoded item has no empty S and no empty SS (or empty SS member)
//     among the attributes the codec writes; Extra is passed through as read;
//   - the encoded item survives MarshalItemJSON/UnmarshalItemJSON unchanged.
func FuzzDecodeLease(f *testing.F) {
	entries, err := os.ReadDir(fixtureDir(f))
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		if name := e.Name(); strings.HasSuffix(name, ".json") || strings.HasSuffix(name, ".jsonl") {
			for _, doc := range fixtureDocs(f, filepath.Base(name)) {
				f.Add(doc)
			}
		}
	}
	for _, doc := range []string{
		`{"leaseKey": {"S": "k"}, "ownerSwitchesSinceCheckpoint": {"N": "0"}, "checkpoint": {"S": "LATEST"}}`,
		`{"leaseKey": {"S": "k"}, "leaseCounter": {"N": "1"}, "ownerSwitchesSinceCheckpoint": {"N": "0"}, "checkpoint": {"S": "abc"}}`,
		`{"leaseKey": {"S": "k"}, "leaseCounter": {"S": "1"}, "ownerSwitchesSinceCheckpoint": {"N": "0"}, "checkpoint": {"S": "LATEST"}}`,
		`{"leaseKey": {"S": ""}, "leaseCounter": {"N": "1"}, "ownerSwitchesSinceCheckpoint": {"N": "0"}, "checkpoint": {"S": "LATEST"}}`,
		`{"leaseKey": {"S": "k"}, "leaseCounter": {"N": "1.0E7"}, "ownerSwitchesSinceCheckpoint": {"N": "-0"}, "checkpoint": {"S": "007"},
		  "throughputKBps": {"N": "1.0E-7"}, "leaseOwner": {"S": ""}, "parentShardId": {"SS": ["a", "b"]}}`,
		`{"leaseKey": {"S": "k"}, "leaseCounter": {"N": "9.223372036854775807E18"}, "ownerSwitchesSinceCheckpoint": {"N": "0"},
		  "checkpoint": {"S": "SHARD_END"}, "pendingCheckpoint": {"S": ""}, "pendingCheckpointSubSequenceNumber": {"N": "2"},
		  "pendingCheckpointState": {"N": "0"}, "x": {"S": ""}, "y": {"NULL": true}}`,
		`{"leaseKey": {"S": "k"}, "leaseCounter": {"N": "1"}, "ownerSwitchesSinceCheckpoint": {"N": "0"}, "checkpoint": {"S": "1"},
		  "pendingCheckpoint": {"S": "2"}, "pendingCheckpointState": {"B": ""}, "childShardIds": {"SS": [""]}}`,
		`{"leaseKey": {"S": "k"}, "entityType": {"N": "1"}}`,
		`{"leaseKey": {"S": "k"}, "leaseCounter": {"N": "1e99999999999999999999"}}`,
		`{"a": {"X": "1"}}`,
		`{"a": {"L": [{"L": [{"M": {"b": {"BS": ["AA=="]}}}]}]}}`,
	} {
		f.Add([]byte(doc))
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		item, err := UnmarshalItemJSON(data)
		if err != nil {
			return
		}
		l, err := DecodeLease(item)
		if err != nil {
			var me *MalformedError
			var nl *NotLeaseError
			if !errors.As(err, &me) && !errors.As(err, &nl) {
				t.Fatalf("DecodeLease returned an untyped error: %v", err)
			}
			return
		}
		if !IsLeaseItem(item) {
			t.Fatal("DecodeLease accepted an item IsLeaseItem rejects")
		}

		enc := EncodeLease(l)
		for name, av := range enc {
			switch v := av.(type) {
			case *types.AttributeValueMemberS:
				if _, extra := l.Extra[name]; v.Value == "" && !extra {
					t.Fatalf("encoded %s as an empty S", name)
				}
			case *types.AttributeValueMemberSS:
				if len(v.Value) == 0 {
					t.Fatalf("encoded %s as an empty SS", name)
				}
				if _, extra := l.Extra[name]; !extra {
					for _, m := range v.Value {
						if m == "" {
							t.Fatalf("encoded %s with an empty member", name)
						}
					}
				}
			}
		}

		l2, err := DecodeLease(enc)
		if err != nil {
			t.Fatalf("DecodeLease(EncodeLease(l)): %v\nlease %+v", err, l)
		}
		if !reflect.DeepEqual(l, l2) {
			t.Fatalf("lease changed across encode/decode:\n got %+v\nwant %+v", l2, l)
		}

		js, err := MarshalItemJSON(enc)
		if err != nil {
			t.Fatalf("MarshalItemJSON(EncodeLease(l)): %v", err)
		}
		back, err := UnmarshalItemJSON(js)
		if err != nil {
			t.Fatalf("UnmarshalItemJSON(MarshalItemJSON): %v\n%s", err, js)
		}
		if !reflect.DeepEqual(back, enc) {
			t.Fatalf("encoded item changed across JSON:\n%s", js)
		}
	})
}
