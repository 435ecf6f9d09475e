package kinesisrec

import (
	"bytes"
	"crypto/md5"
	"errors"
	"fmt"
	"math/big"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/kcltool/kcltool/leasecore"
)

// KPL aggregation (docs/kcl-compat.md, KPL aggregation): magic ‖
// protobuf(AggregatedRecord) ‖ MD5(protobuf). We decode it ourselves instead of
// using the awslabs Go module because that one returns errors where KCL passes
// records through, and emits neither sub-sequence numbers nor explicit hash
// keys, and does not filter by hash range; a consumer sharing a lease table
// with Java workers must see exactly the records and positions they see.
var kplMagic = []byte{0xF3, 0x89, 0x9A, 0xC2}

// Field numbers of messages.proto (proto2).
const (
	aggPartitionKeyTable    = 1 // repeated string
	aggExplicitHashKeyTable = 2 // repeated string
	aggRecords              = 3 // repeated Record

	recPartitionKeyIndex    = 1 // required uint64
	recExplicitHashKeyIndex = 2 // optional uint64
	recData                 = 3 // required bytes
	recTags                 = 4 // repeated Tag

	tagKey = 1 // required string
)

// DeaggregateReport says what Deaggregate did besides passing records
// through, so that the caller can count and log it.
type DeaggregateReport struct {
	// Aggregates is the number of KPL aggregates that were unpacked.
	Aggregates int
	// OutOfRange counts aggregates dropped whole because one of their
	// sub-records hashes outside the shard: after a split or merge the
	// same aggregate is also read from the other shard, and KCL keeps it
	// only there.
	OutOfRange int
	// Broken lists aggregates that passed the checksum and parsed as
	// protobuf but point outside their own key tables or carry an explicit
	// hash key that is not a number. KCL logs these and keeps only the
	// sub-records before the bad one; so does Deaggregate, and the caller
	// should log these errors.
	Broken []error
}

// Deaggregate replaces every KPL aggregate among records by its
// sub-records, the way KCL's AggregatorUtil.deaggregate does:
//
//   - a record that is not an aggregate (shorter than the magic, wrong
//     magic, at most 16 bytes after it, MD5 mismatch, protobuf that does not
//     parse or lacks a required field) passes through unchanged, with
//     sub-sequence number 0;
//   - sub-records keep the aggregate's sequence number and arrival time and
//     get sub-sequence numbers 0, 1, 2…, the partition key from the table
//     and the explicit hash key when they have one;
//   - if any sub-record's hash key (explicit, or MD5 of the partition key)
//     is outside hr, the whole aggregate is dropped.
//
// Sub-record data shares memory with the aggregate's data. When records
// hold no aggregate, Deaggregate returns records itself.
func Deaggregate(records []Record, hr leasecore.HashRange) ([]Record, DeaggregateReport) {
	var rep DeaggregateReport
	first := -1
	for i := range records {
		if bytes.HasPrefix(records[i].Data, kplMagic) {
			first = i
			break
		}
	}
	if first < 0 {
		return records, rep
	}
	out := make([]Record, 0, len(records)+16)
	out = append(out, records[:first]...)
	for _, r := range records[first:] {
		agg, ok := unwrapAggregate(r.Data)
		if !ok {
			out = append(out, r)
			continue
		}
		rep.Aggregates++
		var (
			n   int
			err error
		)
		out, n, err = agg.appendSubRecords(out, r, hr)
		switch {
		case err != nil:
			rep.Broken = append(rep.Broken, fmt.Errorf("KPL aggregate at sequence number %s: %w (kept the %d sub-records before it, as KCL does)", r.SequenceNumber, err, n))
		case n < 0:
			rep.OutOfRange++
		}
	}
	return out, rep
}

// kplAggregate is a parsed AggregatedRecord.
type kplAggregate struct {
	partitionKeys    []string
	explicitHashKeys []string
	records          []kplSubRecord
}

type kplSubRecord struct {
	partitionKeyIndex    uint64
	explicitHashKeyIndex uint64
	hasExplicitHashKey   bool
	data                 []byte
}

// unwrapAggregate checks the framing and checksum and parses the protobuf.
// ok is false for anything KCL would pass through unchanged.
func unwrapAggregate(data []byte) (kplAggregate, bool) {
	if !bytes.HasPrefix(data, kplMagic) || len(data)-len(kplMagic) <= md5.Size {
		return kplAggregate{}, false
	}
	body := data[len(kplMagic) : len(data)-md5.Size]
	sum := md5.Sum(body)
	if !bytes.Equal(sum[:], data[len(data)-md5.Size:]) {
		return kplAggregate{}, false
	}
	agg, err := parseAggregate(body)
	if err != nil {
		return kplAggregate{}, false
	}
	return agg, true
}

// appendSubRecords appends the sub-records of the aggregate r to out and
// returns how many it appended, -1 when it dropped the aggregate for being
// outside hr, or an error (with the count kept) when the aggregate's tables
// are inconsistent.
func (a kplAggregate) appendSubRecords(out []Record, r Record, hr leasecore.HashRange) ([]Record, int, error) {
	start := len(out)
	// Effective hash keys per table entry: a KPL aggregate usually repeats
	// a few partition keys many times, and MD5 + big.Int per sub-record
	// would dominate the cost of de-aggregation.
	pkHash := make([]*big.Int, len(a.partitionKeys))
	ehkHash := make([]*big.Int, len(a.explicitHashKeys))
	for i, sr := range a.records {
		pkIdx, ok := tableIndex(sr.partitionKeyIndex, len(a.partitionKeys))
		if !ok {
			return out, i, fmt.Errorf("sub-record %d: partition key index %d is outside the table of %d", i, sr.partitionKeyIndex, len(a.partitionKeys))
		}
		sub := r
		sub.Data, sub.wire64, sub.encodedLen = sr.data, "", 0
		sub.PartitionKey = a.partitionKeys[pkIdx]
		sub.SubSequenceNumber = int64(i)
		sub.ExplicitHashKey = ""
		var key *big.Int
		if sr.hasExplicitHashKey {
			ehIdx, ok := tableIndex(sr.explicitHashKeyIndex, len(a.explicitHashKeys))
			if !ok {
				return out, i, fmt.Errorf("sub-record %d: explicit hash key index %d is outside the table of %d", i, sr.explicitHashKeyIndex, len(a.explicitHashKeys))
			}
			sub.ExplicitHashKey = a.explicitHashKeys[ehIdx]
			if ehkHash[ehIdx] == nil {
				k, err := parseExplicitHashKey(sub.ExplicitHashKey)
				if err != nil {
					return out, i, fmt.Errorf("sub-record %d: %w", i, err)
				}
				ehkHash[ehIdx] = k
			}
			key = ehkHash[ehIdx]
		} else {
			if pkHash[pkIdx] == nil {
				pkHash[pkIdx] = partitionKeyHash(sub.PartitionKey)
			}
			key = pkHash[pkIdx]
		}
		if !hr.Contains(key) {
			clear(out[start:])
			return out[:start], -1, nil
		}
		out = append(out, sub)
	}
	return out, len(a.records), nil
}

// tableIndex converts a protobuf uint64 index the way KCL does, with a Java
// (int) cast, which keeps the low 32 bits as a signed int.
func tableIndex(idx uint64, n int) (int, bool) {
	i := int(int32(idx))
	return i, i >= 0 && i < n
}

var (
	errMissingRequired = errors.New("required field missing")
	errEndGroup        = errors.New("unmatched end-group tag")
)

// parseAggregate decodes AggregatedRecord as Java's generated proto2 parser
// does: fields with an unexpected wire type are unknown fields and skipped,
// repeated values accumulate, a repeated scalar keeps the last value, and a
// missing required field is a parse error.
func parseAggregate(b []byte) (kplAggregate, error) {
	var a kplAggregate
	err := walkFields(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case aggPartitionKeyTable:
			a.partitionKeys = append(a.partitionKeys, string(v))
		case aggExplicitHashKeyTable:
			a.explicitHashKeys = append(a.explicitHashKeys, string(v))
		case aggRecords:
			sr, err := parseSubRecord(v)
			if err != nil {
				return err
			}
			a.records = append(a.records, sr)
		default:
			return nil
		}
		return nil
	})
	return a, err
}

func parseSubRecord(b []byte) (kplSubRecord, error) {
	var (
		sr             kplSubRecord
		hasPK, hasData bool
	)
	err := walkFields(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		switch {
		case num == recPartitionKeyIndex && typ == protowire.VarintType:
			sr.partitionKeyIndex, _ = protowire.ConsumeVarint(v)
			hasPK = true
		case num == recExplicitHashKeyIndex && typ == protowire.VarintType:
			sr.explicitHashKeyIndex, _ = protowire.ConsumeVarint(v)
			sr.hasExplicitHashKey = true
		case num == recData && typ == protowire.BytesType:
			sr.data, hasData = v, true
		case num == recTags && typ == protowire.BytesType:
			// Tags are unused, but a malformed one fails the whole parse in
			// KCL, so it must here too.
			return parseTag(v)
		default:
			return nil
		}
		return nil
	})
	if err == nil && (!hasPK || !hasData) {
		err = errMissingRequired
	}
	return sr, err
}

func parseTag(b []byte) error {
	hasKey := false
	err := walkFields(b, func(num protowire.Number, typ protowire.Type, _ []byte) error {
		if num == tagKey && typ == protowire.BytesType {
			hasKey = true
			return nil
		}
		return nil
	})
	if err == nil && !hasKey {
		err = errMissingRequired
	}
	return err
}

// walkFields calls fn for each varint and length-delimited field of the
// message b: for a varint v holds its encoding, for a length-delimited field
// its contents. Fields of other wire types are skipped (none of ours has
// one), after checking that they are well formed.
func walkFields(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		var v []byte
		switch typ {
		case protowire.VarintType:
			_, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return protowire.ParseError(m)
			}
			v, n = b[:m], m
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		case protowire.EndGroupType:
			return errEndGroup
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if typ == protowire.VarintType || typ == protowire.BytesType {
			if err := fn(num, typ, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// partitionKeyHash is the hash key Kinesis derives from a partition key:
// the MD5 of its UTF-8 bytes read as an unsigned 128-bit integer.
func partitionKeyHash(pk string) *big.Int {
	sum := md5.Sum([]byte(pk))
	return new(big.Int).SetBytes(sum[:])
}

// parseExplicitHashKey reads an explicit hash key the way Java's
// new BigInteger(String) does: optional sign, decimal digits. A negative or
// oversized key is valid here and simply falls outside every shard.
// (Java also accepts non-ASCII Unicode digits; no producer writes those.)
func parseExplicitHashKey(s string) (*big.Int, error) {
	k, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return nil, fmt.Errorf("explicit hash key %q is not a decimal integer", s)
	}
	return k, nil
}
