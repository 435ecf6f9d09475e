package emulator

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/smithy-go/encoding/cbor"
)

// Call is one AWS request as a Recorder saw it: the operation and the
// resource it names, which is what an IAM policy judges.
type Call struct {
	Service string `json:"service"` // dynamodb, kinesis, cloudwatch or s3
	Action  string `json:"action"`  // the operation: Scan, ListShards, PutMetricData
	Region  string `json:"region,omitempty"`
	Table   string `json:"table,omitempty"`
	// Index is the secondary index a Query names: IAM authorizes the call
	// on the index's ARN (table/T/index/I), not the table's.
	Index     string `json:"index,omitempty"`
	Stream    string `json:"stream,omitempty"`
	StreamARN string `json:"streamARN,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	// The enhanced fan-out consumer a call names: by ARN, or by name on
	// StreamARN.
	ConsumerName string `json:"consumerName,omitempty"`
	ConsumerARN  string `json:"consumerARN,omitempty"`
	// An S3 request's bucket, object key, and a listing's prefix.
	Bucket string `json:"bucket,omitempty"`
	Key    string `json:"key,omitempty"`
	Prefix string `json:"prefix,omitempty"`
}

// Invocation is one command line and the distinct calls it made.
type Invocation struct {
	Argv []string `json:"argv"`
	// Env holds the variables that can set the command's flags.
	Env   map[string]string `json:"env,omitempty"`
	Calls []Call            `json:"-"`
}

// CallLog writes the distinct calls of one invocation to a file of its own
// in a folder: a header line with the command line, then one JSON line per
// call, each written when first seen, so a process killed mid-test keeps
// what it did. No file is made for an invocation without calls.
type CallLog struct {
	dir    string
	header Invocation

	mu   sync.Mutex
	f    *os.File
	seen map[Call]bool
	err  error
}

// NewCallLog logs the calls of argv (with env, the variables that set
// flags) into dir.
func NewCallLog(dir string, argv []string, env map[string]string) *CallLog {
	return &CallLog{dir: dir, header: Invocation{Argv: argv, Env: env}, seen: map[Call]bool{}}
}

// Add records a call; a repeated one is written once.
func (l *CallLog) Add(c Call) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen[c] || l.err != nil {
		return
	}
	l.seen[c] = true
	if l.f == nil {
		if l.f, l.err = os.CreateTemp(l.dir, "calls-*.jsonl"); l.err != nil {
			return
		}
		l.err = l.writeLine(l.header)
	}
	if l.err == nil {
		l.err = l.writeLine(c)
	}
}

func (l *CallLog) writeLine(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = l.f.Write(append(b, '\n'))
	return err
}

// Close closes the file and returns the first error writing it.
func (l *CallLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		if err := l.f.Close(); l.err == nil {
			l.err = err
		}
	}
	return l.err
}

// ReadCallLogs reads every invocation logged in dir, in file-name order.
func ReadCallLogs(dir string) ([]Invocation, error) {
	files, err := filepath.Glob(filepath.Join(dir, "calls-*.jsonl"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []Invocation
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		var inv Invocation
		for n := 0; sc.Scan(); n++ {
			if n == 0 {
				err = json.Unmarshal(sc.Bytes(), &inv)
			} else {
				var c Call
				if err = json.Unmarshal(sc.Bytes(), &c); err == nil {
					inv.Calls = append(inv.Calls, c)
				}
			}
			if err != nil {
				// A process killed mid-write leaves a partial last line.
				break
			}
		}
		out = append(out, inv)
	}
	return out, nil
}

// Recorder is a reverse proxy in front of one local server (or another
// proxy) that logs every request's operation and resource before passing
// it on unchanged.
type Recorder struct {
	URL string
	srv *http.Server

	mu        sync.Mutex
	counts    map[string]int64 // by action, and by "action shardId"
	inFlight  int
	maxFlight int
}

// NewRecorder starts a recorder forwarding to target.
func NewRecorder(target string, log *CallLog) (*Recorder, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	tr := upstreamTransport()
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = pr.In.Host
		},
		Transport: tr,
		// An upstream that failed is passed on as a dropped connection,
		// not as a 502 the client would read as a server's answer.
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, _ error) {
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					c.Close()
					return
				}
			}
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	r := &Recorder{URL: "http://" + l.Addr().String(), counts: map[string]int64{}}
	r.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		c := callOf(req, body)
		log.Add(c)
		r.begin(c.Action, body)
		defer r.end()
		rp.ServeHTTP(w, req)
	})}
	go func() { _ = r.srv.Serve(l) }()
	return r, nil
}

// begin counts a request by action, and by shard when its body names one
// (GetShardIterator's ShardId).
func (r *Recorder) begin(action string, body []byte) {
	var named struct{ ShardId string }
	if bytes.Contains(body, []byte(`"ShardId"`)) {
		_ = json.Unmarshal(body, &named)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts[action]++
	if named.ShardId != "" {
		r.counts[action+" "+named.ShardId]++
	}
	r.inFlight++
	r.maxFlight = max(r.maxFlight, r.inFlight)
}

func (r *Recorder) end() {
	r.mu.Lock()
	r.inFlight--
	r.mu.Unlock()
}

// Count is how many requests of action the recorder passed on.
func (r *Recorder) Count(action string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[action]
}

// ShardCounts is how many requests of action named each shard (by the
// ShardId of the request body).
func (r *Recorder) ShardCounts(action string) map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int64{}
	for k, n := range r.counts {
		if a, shard, ok := strings.Cut(k, " "); ok && a == action {
			out[shard] = n
		}
	}
	return out
}

// MaxInFlight is the most requests the recorder had open at once.
func (r *Recorder) MaxInFlight() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.maxFlight
}

// Close stops the recorder.
func (r *Recorder) Close() { _ = r.srv.Close() }

// targetPrefixes are the JSON protocols' X-Amz-Target prefixes.
var targetPrefixes = map[string]string{
	"DynamoDB_20120810":             "dynamodb",
	"Kinesis_20131202":              "kinesis",
	"GraniteServiceVersion20100801": "cloudwatch",
}

var scopeRegion = regexp.MustCompile(`Credential=[^/]+/\d{8}/([^/]+)/([^/]+)/`)

// callOf reads the operation from X-Amz-Target (DynamoDB, Kinesis) or the
// rpc-v2-cbor path /service/GraniteServiceVersion20100801/operation/Op
// (CloudWatch), the region from the SigV4 scope, and the resource from the
// body.
func callOf(req *http.Request, body []byte) Call {
	var c Call
	m := scopeRegion.FindStringSubmatch(req.Header.Get("Authorization"))
	if m != nil && m[2] == "s3" {
		c = s3CallOf(req)
		c.Region = m[1]
		return c
	}
	if t := req.Header.Get("X-Amz-Target"); t != "" {
		prefix, op, _ := strings.Cut(t, ".")
		c.Service, c.Action = targetPrefixes[prefix], op
		if c.Service == "" {
			c.Service = "unknown:" + prefix
		}
	} else if parts := strings.Split(req.URL.Path, "/"); len(parts) == 5 && parts[1] == "service" && parts[3] == "operation" {
		c.Service, c.Action = targetPrefixes[parts[2]], path.Base(req.URL.Path)
		if c.Service == "" {
			c.Service = "unknown:" + parts[2]
		}
	} else {
		c.Service, c.Action = "unknown", req.Method+" "+req.URL.Path
	}
	if m != nil {
		c.Region = m[1]
	}
	if req.Header.Get("Content-Encoding") == "gzip" {
		if zr, err := gzip.NewReader(bytes.NewReader(body)); err == nil {
			if b, err := io.ReadAll(zr); err == nil {
				body = b
			}
		}
	}
	if strings.Contains(req.Header.Get("Content-Type"), "cbor") {
		if v, err := cbor.Decode(body); err == nil {
			if m, ok := v.(cbor.Map); ok {
				ns, _ := m["Namespace"].(cbor.String)
				c.Namespace = string(ns)
			}
		}
		return c
	}
	var named struct{ TableName, IndexName, StreamName, StreamARN, Namespace, ConsumerName, ConsumerARN string }
	if err := json.Unmarshal(body, &named); err == nil || errors.Is(err, io.EOF) {
		c.Table, c.Index, c.Stream, c.StreamARN, c.Namespace = named.TableName, named.IndexName, named.StreamName, named.StreamARN, named.Namespace
		c.ConsumerName, c.ConsumerARN = named.ConsumerName, named.ConsumerARN
	}
	return c
}

// s3CallOf reads an S3 REST request addressed path-style
// (/bucket/key?query), as kcltool's client sends them: the operation from
// the method and the query, the bucket, key and listing prefix.
func s3CallOf(req *http.Request) Call {
	c := Call{Service: "s3"}
	c.Bucket, c.Key, _ = strings.Cut(strings.TrimPrefix(req.URL.Path, "/"), "/")
	q := req.URL.Query()
	switch {
	case req.Method == http.MethodGet && c.Key == "" && q.Get("list-type") == "2":
		c.Action, c.Prefix = "ListObjectsV2", q.Get("prefix")
	case req.Method == http.MethodGet && c.Key != "":
		c.Action = "GetObject"
	case req.Method == http.MethodHead && c.Key != "":
		c.Action = "HeadObject"
	case req.Method == http.MethodPut && c.Key != "":
		c.Action = "PutObject"
	case req.Method == http.MethodPut:
		c.Action = "CreateBucket"
	default:
		c.Action = req.Method + " " + req.URL.RequestURI()
	}
	return c
}

// upstreamTransport is the transport of a proxy in front of a local server:
// no HTTP proxy from the environment, and as many idle connections upstream
// as a kcltool worker keeps to the proxy, so that a test counting the
// connections a worker opens still counts its own.
func upstreamTransport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 1024, 256
	return tr
}
