package leasecore

import (
	"bytes"
	"encoding/base64"
	"math"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/jsonscan"
)

// Reading a lease table is mostly decoding Scan answers: the SDK's
// schema-driven decoder spends more CPU on a page than everything kcltool
// does with its leases afterwards. fastScan decodes the usual answer
// (Items, Count, ScannedCount, LastEvaluatedKey, and the ConsumedCapacity
// every lease-table scan asks for) itself, in one pass, into the SDK's own
// output type. Anything else (per-index capacity, an error answer, an
// attribute type it does not know, malformed JSON) goes to the
// SDK's decoder on the same bytes, so the result is the SDK's either way; a
// test compares the two on dynalite's answers for every fixture.
//
// Decoded strings share the bytes of their page (up to 1 MB), so whoever
// keeps one keeps the page. Scans are read and dropped whole: the taker
// keeps only its latest scan, and a held lease is the item its take or
// checkpoint wrote back (ALL_NEW, decoded by the SDK), not the scanned one.

// fastScan is a per-call option for Scan.
func fastScan(o *dynamodb.Options) {
	if o.Protocol != nil {
		o.Protocol = jsonscan.Protocol[dynamodb.ScanOutput, *dynamodb.ScanOutput]{
			ClientProtocol: o.Protocol, Decode: decodeScan, Fallbacks: &sdkDecodedScans}
	}
}

// sdkDecodedScans counts the answers left to the SDK's decoder, for tests.
var sdkDecodedScans atomic.Int64

// decodeScan fills o from a Scan answer, or fails and leaves it to the SDK.
func decodeScan(body []byte, o *dynamodb.ScanOutput) error {
	s := jsonscan.New(body)
	d := &avDecoder{s: s}
	err := s.Object(func(key []byte) error {
		switch string(key) {
		case "Items":
			// Most attributes are S or N: their values come from two slabs
			// sized by the body, not one allocation each.
			n := bytes.Count(s.Rest(), []byte{'{'})
			d.strs = make([]types.AttributeValueMemberS, 0, n)
			d.nums = make([]types.AttributeValueMemberN, 0, n)
			o.Items = []map[string]types.AttributeValue{}
			return s.Array(func() error {
				item, err := d.item()
				o.Items = append(o.Items, item)
				return err
			})
		case "LastEvaluatedKey":
			item, err := d.item()
			o.LastEvaluatedKey = item
			return err
		case "ConsumedCapacity":
			cc, err := decodeConsumedCapacity(s, true)
			o.ConsumedCapacity = cc
			return err
		case "Count", "ScannedCount":
			n, err := s.Int()
			if err != nil || n < math.MinInt32 || n > math.MaxInt32 {
				return jsonscan.ErrUnhandled
			}
			if key[0] == 'C' {
				o.Count = int32(n)
			} else {
				o.ScannedCount = int32(n)
			}
			return nil
		}
		return jsonscan.ErrUnhandled
	})
	if err != nil || !s.End() {
		return jsonscan.ErrUnhandled
	}
	return nil
}

// decodeConsumedCapacity reads a ConsumedCapacity object as ReturnConsumedCapacity
// TOTAL answers it, and the table's own figures of an INDEXES answer (Table,
// when top is set); per-index figures are left to the SDK.
func decodeConsumedCapacity(s *jsonscan.Scanner, top bool) (*types.ConsumedCapacity, error) {
	cc := &types.ConsumedCapacity{}
	err := s.Object(func(key []byte) error {
		var f *float64
		switch string(key) {
		case "CapacityUnits":
			f = new(float64)
			cc.CapacityUnits = f
		case "ReadCapacityUnits":
			f = new(float64)
			cc.ReadCapacityUnits = f
		case "WriteCapacityUnits":
			f = new(float64)
			cc.WriteCapacityUnits = f
		case "TableName":
			if !top {
				return jsonscan.ErrUnhandled
			}
			v, err := s.String()
			cc.TableName = &v
			return err
		case "Table":
			if !top {
				return jsonscan.ErrUnhandled
			}
			t, err := decodeConsumedCapacity(s, false)
			if err == nil {
				cc.Table = &types.Capacity{CapacityUnits: t.CapacityUnits, ReadCapacityUnits: t.ReadCapacityUnits, WriteCapacityUnits: t.WriteCapacityUnits}
			}
			return err
		default:
			return jsonscan.ErrUnhandled
		}
		v, err := s.Float()
		*f = v
		return err
	})
	return cc, err
}

type avDecoder struct {
	s    *jsonscan.Scanner
	strs []types.AttributeValueMemberS
	nums []types.AttributeValueMemberN
}

func (d *avDecoder) item() (map[string]types.AttributeValue, error) {
	item := map[string]types.AttributeValue{}
	err := d.s.Object(func(key []byte) error {
		av, err := d.value()
		item[string(key)] = av
		return err
	})
	return item, err
}

// value decodes one AttributeValue: an object with exactly one member.
func (d *avDecoder) value() (types.AttributeValue, error) {
	s := d.s
	var av types.AttributeValue
	err := s.Object(func(key []byte) error {
		if av != nil {
			return jsonscan.ErrUnhandled
		}
		var err error
		switch string(key) {
		case "S":
			var v string
			if v, err = s.String(); err == nil {
				av = d.str(v)
			}
		case "N":
			var v string
			if v, err = s.String(); err == nil {
				av = d.num(v)
			}
		case "B":
			var v []byte
			if v, err = d.binary(); err == nil {
				av = &types.AttributeValueMemberB{Value: v}
			}
		case "SS", "NS":
			v := []string{}
			err = s.Array(func() error {
				e, err := s.String()
				v = append(v, e)
				return err
			})
			if key[0] == 'S' {
				av = &types.AttributeValueMemberSS{Value: v}
			} else {
				av = &types.AttributeValueMemberNS{Value: v}
			}
		case "BS":
			v := [][]byte{}
			err = s.Array(func() error {
				e, err := d.binary()
				v = append(v, e)
				return err
			})
			av = &types.AttributeValueMemberBS{Value: v}
		case "BOOL":
			var v bool
			if v, err = s.Bool(); err == nil {
				av = &types.AttributeValueMemberBOOL{Value: v}
			}
		case "NULL":
			var v bool
			if v, err = s.Bool(); err == nil {
				av = &types.AttributeValueMemberNULL{Value: v}
			}
		case "L":
			v := []types.AttributeValue{}
			err = s.Array(func() error {
				e, err := d.value()
				v = append(v, e)
				return err
			})
			av = &types.AttributeValueMemberL{Value: v}
		case "M":
			var v map[string]types.AttributeValue
			if v, err = d.item(); err == nil {
				av = &types.AttributeValueMemberM{Value: v}
			}
		default:
			return jsonscan.ErrUnhandled
		}
		return err
	})
	if err == nil && av == nil {
		err = jsonscan.ErrUnhandled
	}
	return av, err
}

func (d *avDecoder) str(v string) types.AttributeValue {
	if len(d.strs) == cap(d.strs) {
		return &types.AttributeValueMemberS{Value: v}
	}
	d.strs = append(d.strs, types.AttributeValueMemberS{Value: v})
	return &d.strs[len(d.strs)-1]
}

func (d *avDecoder) num(v string) types.AttributeValue {
	if len(d.nums) == cap(d.nums) {
		return &types.AttributeValueMemberN{Value: v}
	}
	d.nums = append(d.nums, types.AttributeValueMemberN{Value: v})
	return &d.nums[len(d.nums)-1]
}

func (d *avDecoder) binary() ([]byte, error) {
	raw, _, err := d.s.Base64String()
	if err != nil {
		return nil, err
	}
	v := make([]byte, base64.StdEncoding.DecodedLen(len(raw)))
	n, err := base64.StdEncoding.Decode(v, raw)
	if err != nil {
		return nil, jsonscan.ErrUnhandled
	}
	return v[:n], nil
}
