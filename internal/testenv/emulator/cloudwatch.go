package emulator

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"sync"

	"github.com/aws/smithy-go/encoding/cbor"
)

// CloudWatch is an in-test CloudWatch that records PutMetricData. No local
// server speaks the protocol the Go SDK uses for CloudWatch (smithy
// rpc-v2-cbor), so this fake does: POST
// /service/GraniteServiceVersion20100801/operation/<Op>, CBOR bodies, the
// Smithy-Protocol header (emulators.md §5).
type CloudWatch struct {
	URL string

	mu    sync.Mutex
	data  []Datum
	calls int
}

// Datum is one metric datum as the fake received it.
type Datum struct {
	Namespace  string
	MetricName string
	Unit       string
	Dimensions map[string]string
	// Value is the single value, or the statistic set's Sum; SampleCount
	// is 1 for a single value.
	Value       float64
	SampleCount float64
}

// NewCloudWatch starts the fake; it stops when the test ends.
func NewCloudWatch(tb interface {
	TB
	Cleanup(func())
}) *CloudWatch {
	c := &CloudWatch{}
	srv := httptest.NewServer(http.HandlerFunc(c.serve))
	tb.Cleanup(srv.Close)
	c.URL = srv.URL
	return c
}

// Data returns every datum received so far.
func (c *CloudWatch) Data() []Datum {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Datum(nil), c.data...)
}

// Calls is the number of PutMetricData requests.
func (c *CloudWatch) Calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

func (c *CloudWatch) serve(w http.ResponseWriter, r *http.Request) {
	body, err := requestBody(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if op := path.Base(r.URL.Path); op != "PutMetricData" {
		c.fail(w, "UnknownOperationException", "the fake only knows PutMetricData, not "+op)
		return
	}
	v, err := cbor.Decode(body)
	if err != nil {
		c.fail(w, "InvalidParameterValueException", "body is not CBOR: "+err.Error())
		return
	}
	data, err := decodePut(v)
	if err != nil {
		c.fail(w, "InvalidParameterValueException", err.Error())
		return
	}
	c.mu.Lock()
	c.calls++
	c.data = append(c.data, data...)
	c.mu.Unlock()
	w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
	w.Header().Set("Content-Type", "application/cbor")
	_, _ = w.Write(cbor.Encode(cbor.Map{}))
}

func (c *CloudWatch) fail(w http.ResponseWriter, code, msg string) {
	w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
	w.Header().Set("Content-Type", "application/cbor")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(cbor.Encode(cbor.Map{"__type": cbor.String("com.amazonaws.cloudwatch#" + code), "message": cbor.String(msg)}))
}

func decodePut(v cbor.Value) ([]Datum, error) {
	m, ok := v.(cbor.Map)
	if !ok {
		return nil, fmt.Errorf("request is %T, not a map", v)
	}
	ns, _ := m["Namespace"].(cbor.String)
	list, _ := m["MetricData"].(cbor.List)
	var out []Datum
	for _, item := range list {
		dm, ok := item.(cbor.Map)
		if !ok {
			return nil, fmt.Errorf("metric datum is %T", item)
		}
		d := Datum{Namespace: string(ns), Dimensions: map[string]string{}, SampleCount: 1}
		if s, ok := dm["MetricName"].(cbor.String); ok {
			d.MetricName = string(s)
		}
		if s, ok := dm["Unit"].(cbor.String); ok {
			d.Unit = string(s)
		}
		dims, _ := dm["Dimensions"].(cbor.List)
		for _, dv := range dims {
			if dd, ok := dv.(cbor.Map); ok {
				name, _ := dd["Name"].(cbor.String)
				value, _ := dd["Value"].(cbor.String)
				d.Dimensions[string(name)] = string(value)
			}
		}
		if val, ok := dm["Value"]; ok {
			f, err := cbor.AsFloat64(val)
			if err != nil {
				return nil, err
			}
			d.Value = f
		}
		if sv, ok := dm["StatisticValues"].(cbor.Map); ok {
			sum, err := cbor.AsFloat64(sv["Sum"])
			if err != nil {
				return nil, err
			}
			n, err := cbor.AsFloat64(sv["SampleCount"])
			if err != nil {
				return nil, err
			}
			d.Value, d.SampleCount = sum, n
		}
		out = append(out, d)
	}
	return out, nil
}

// requestBody reads a request's body; the SDK gzips PutMetricData bodies
// (request compression).
func requestBody(r *http.Request) ([]byte, error) {
	var in io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, err
		}
		in = zr
	}
	return io.ReadAll(in)
}
