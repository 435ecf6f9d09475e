package emulator

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"path"
	"sort"
	"sync"
	"time"

	"github.com/aws/smithy-go/encoding/cbor"
)

// MetricStore is an in-test CloudWatch that keeps datapoints and answers
// GetMetricData from them, so tests can read back what workers published
// (PutMetricData) and what the test seeded (the AWS/DynamoDB and
// AWS/Kinesis metrics no local server publishes). It speaks smithy
// rpc-v2-cbor like the SDK (emulators.md §5) and matches dimensions exactly,
// as CloudWatch does.
type MetricStore struct {
	URL string

	mu     sync.Mutex
	points []storedPoint
	deny   string
	calls  map[string]int
}

type storedPoint struct {
	Datum
	At time.Time
}

// NewMetricStore starts the fake; it stops when the test ends.
func NewMetricStore(tb interface {
	TB
	Cleanup(func())
}) *MetricStore {
	s := &MetricStore{calls: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Add stores one datapoint (sample count 1) at the given time.
func (s *MetricStore) Add(namespace, metric string, dims map[string]string, at time.Time, value float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.points = append(s.points, storedPoint{Datum: Datum{Namespace: namespace, MetricName: metric, Dimensions: dims, Value: value, SampleCount: 1}, At: at})
}

// Deny makes every request fail with this error code (for example
// AccessDeniedException); "" serves again.
func (s *MetricStore) Deny(code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deny = code
}

// Calls counts the requests of one operation.
func (s *MetricStore) Calls(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[op]
}

func (s *MetricStore) serve(w http.ResponseWriter, r *http.Request) {
	op := path.Base(r.URL.Path)
	body, err := requestBody(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.calls[op]++
	deny := s.deny
	s.mu.Unlock()
	if deny != "" {
		cwFail(w, deny, "User: arn:aws:iam::123456789012:user/ci is not authorized to perform: cloudwatch:"+op)
		return
	}
	v, err := cbor.Decode(body)
	if err != nil {
		cwFail(w, "InvalidParameterValueException", "body is not CBOR: "+err.Error())
		return
	}
	var out cbor.Map
	switch op {
	case "PutMetricData":
		data, err := decodePut(v)
		if err == nil {
			s.mu.Lock()
			for _, d := range data {
				s.points = append(s.points, storedPoint{Datum: d, At: time.Now()})
			}
			s.mu.Unlock()
		}
		out = cbor.Map{}
	case "GetMetricData":
		out, err = s.getMetricData(v)
	default:
		err = fmt.Errorf("the fake does not know %s", op)
	}
	if err != nil {
		cwFail(w, "InvalidParameterValueException", err.Error())
		return
	}
	w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
	w.Header().Set("Content-Type", "application/cbor")
	_, _ = w.Write(cbor.Encode(out))
}

func cwFail(w http.ResponseWriter, code, msg string) {
	w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
	w.Header().Set("Content-Type", "application/cbor")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(cbor.Encode(cbor.Map{"__type": cbor.String("com.amazonaws.cloudwatch#" + code), "message": cbor.String(msg)}))
}

// query is one MetricStat query of a GetMetricData request.
type query struct {
	id, namespace, name, stat string
	dims                      map[string]string
	period                    time.Duration
}

func (s *MetricStore) getMetricData(v cbor.Value) (cbor.Map, error) {
	m, ok := v.(cbor.Map)
	if !ok {
		return nil, fmt.Errorf("request is %T, not a map", v)
	}
	start, err := cbor.AsTime(m["StartTime"])
	if err != nil {
		return nil, fmt.Errorf("StartTime: %w", err)
	}
	end, err := cbor.AsTime(m["EndTime"])
	if err != nil {
		return nil, fmt.Errorf("EndTime: %w", err)
	}
	list, _ := m["MetricDataQueries"].(cbor.List)
	if len(list) > 500 {
		return nil, fmt.Errorf("%d queries: at most 500 per request", len(list))
	}
	results := cbor.List{}
	for _, item := range list {
		q, err := parseQuery(item)
		if err != nil {
			return nil, err
		}
		results = append(results, s.answer(q, start, end))
	}
	return cbor.Map{"MetricDataResults": results, "Messages": cbor.List{}}, nil
}

func parseQuery(v cbor.Value) (query, error) {
	qm, ok := v.(cbor.Map)
	if !ok {
		return query{}, fmt.Errorf("query is %T", v)
	}
	id, _ := qm["Id"].(cbor.String)
	ms, ok := qm["MetricStat"].(cbor.Map)
	if !ok {
		return query{}, fmt.Errorf("query %s: the fake answers MetricStat queries only", id)
	}
	metric, _ := ms["Metric"].(cbor.Map)
	q := query{id: string(id), dims: map[string]string{}}
	if s, ok := metric["Namespace"].(cbor.String); ok {
		q.namespace = string(s)
	}
	if s, ok := metric["MetricName"].(cbor.String); ok {
		q.name = string(s)
	}
	if s, ok := ms["Stat"].(cbor.String); ok {
		q.stat = string(s)
	}
	period, err := cbor.AsInt64(ms["Period"])
	if err != nil || period <= 0 {
		return query{}, fmt.Errorf("query %s: Period is required", id)
	}
	q.period = time.Duration(period) * time.Second
	dims, _ := metric["Dimensions"].(cbor.List)
	for _, dv := range dims {
		if dd, ok := dv.(cbor.Map); ok {
			name, _ := dd["Name"].(cbor.String)
			value, _ := dd["Value"].(cbor.String)
			q.dims[string(name)] = string(value)
		}
	}
	return q, nil
}

// answer buckets the matching datapoints by period from StartTime and
// applies the statistic, newest bucket first (CloudWatch's default order).
func (s *MetricStore) answer(q query, start, end time.Time) cbor.Map {
	s.mu.Lock()
	defer s.mu.Unlock()
	buckets := map[int64][]storedPoint{}
	for _, p := range s.points {
		if p.Namespace != q.namespace || p.MetricName != q.name || !sameDims(p.Dimensions, q.dims) || p.At.Before(start) || !p.At.Before(end) {
			continue
		}
		n := int64(p.At.Sub(start) / q.period)
		buckets[n] = append(buckets[n], p)
	}
	keys := make([]int64, 0, len(buckets))
	for k := range buckets {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] > keys[j] })
	times, values := cbor.List{}, cbor.List{}
	for _, k := range keys {
		at := start.Add(time.Duration(k) * q.period)
		times = append(times, &cbor.Tag{ID: 1, Value: cbor.Float64(float64(at.UnixMilli()) / 1000)})
		values = append(values, cbor.Float64(stat(q.stat, buckets[k])))
	}
	return cbor.Map{"Id": cbor.String(q.id), "Label": cbor.String(q.name), "Timestamps": times, "Values": values, "StatusCode": cbor.String("Complete")}
}

func sameDims(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func stat(name string, ps []storedPoint) float64 {
	sum, n, lo, hi := 0.0, 0.0, math.Inf(1), math.Inf(-1)
	for _, p := range ps {
		sum += p.Value
		n += p.SampleCount
		// A statistic set's own extremes are not kept; its mean stands in.
		v := p.Value / p.SampleCount
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	switch name {
	case "Sum":
		return sum
	case "SampleCount":
		return n
	case "Average":
		return sum / n
	case "Minimum":
		return lo
	}
	return hi
}
