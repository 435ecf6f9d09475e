package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
)

// StreamMode chooses between the KCL's single-stream lease table (lease
// key = shard id) and its multi-stream one (lease key =
// "<account>:<stream>:<creationEpoch>:<shardId>", with streamName and
// shardId attributes). The two are not compatible: the KCL ignores the
// other format's leases, and kcltool would misread them.
type StreamMode int

const (
	// StreamModeAuto is multi-stream with two or more streams or when the
	// table already holds multi-stream leases, single-stream otherwise.
	StreamModeAuto StreamMode = iota
	// StreamModeSingle is the single-stream table; refused on a table
	// with multi-stream leases.
	StreamModeSingle
	// StreamModeMulti is the multi-stream table, even for one stream;
	// refused on a table with single-stream leases.
	StreamModeMulti
)

func defaultStreams(first reshard.Stream, all []reshard.Stream) (reshard.Stream, []reshard.Stream) {
	if len(all) == 0 && (first.Name != "" || first.ARN != "") {
		all = []reshard.Stream{first}
	}
	if first.Name == "" && first.ARN == "" && len(all) > 0 {
		first = all[0]
	}
	return first, all
}

// MultiStreamTableError refuses a run whose stream mode does not match the
// lease table's leases.
type MultiStreamTableError struct {
	Table string
	// Reason is why, its settings said by name (settingOption).
	Reason string
	// format and args made Reason; args of type setting or phrase are
	// said by Say.
	format string
	args   []any
}

func (e *MultiStreamTableError) Error() string {
	return fmt.Sprintf("lease table %q: %s", e.Table, e.Reason)
}

// Say is Error with the settings it names said by name: cmd says them as
// its flags.
func (e *MultiStreamTableError) Say(name func(setting string) string) string {
	if e.format == "" { // built with a Reason only
		return e.Error()
	}
	return fmt.Sprintf("lease table %q: %s", e.Table, sayf(name, e.format, e.args...))
}

func multiStreamTableError(table, format string, args ...any) *MultiStreamTableError {
	return &MultiStreamTableError{Table: table, Reason: sayf(settingOption, format, args...), format: format, args: args}
}

// setting is a setting named in an error, spelled as its flag without
// the dashes; phrase is words about settings.
type (
	setting string
	phrase  func(name func(setting string) string) string
)

// sayf formats with each setting and phrase among args said through name.
func sayf(name func(string) string, format string, args ...any) string {
	out := make([]any, len(args))
	for i, a := range args {
		switch a := a.(type) {
		case setting:
			out[i] = name(string(a))
		case phrase:
			out[i] = a(name)
		default:
			out[i] = a
		}
	}
	return fmt.Sprintf(format, out...)
}

// resolveStreams picks the stream mode from the configuration and the
// table's leases, and in multi-stream mode gives each stream its KCL
// identifier. It reads the table once and writes nothing: a refused run
// leaves the table as it was.
func (w *Worker) resolveStreams(ctx context.Context) error {
	cfg := w.cfg
	res, err := leasecore.ScanTable(ctx, w.ddb, cfg.Table, leasecore.ScanOptions{ConsistentRead: true})
	if err != nil {
		return fmt.Errorf("read lease table %q: %w", cfg.Table, err)
	}
	var multiKey, singleKey string
	var multiCount, singleCount int
	for _, l := range res.Leases {
		if l.IsMultiStream() {
			multiCount++
			multiKey = l.LeaseKey
		} else {
			singleCount++
			singleKey = l.LeaseKey
		}
	}
	multi := cfg.StreamMode == StreamModeMulti || len(cfg.Streams) > 1 || cfg.StreamMode == StreamModeAuto && multiCount > 0
	switch {
	case multiCount > 0 && singleCount > 0:
		return multiStreamTableError(cfg.Table,
			"it holds both single-stream leases (such as %q) and multi-stream leases (such as %q); the KCL reads only one kind, "+
				"so kcltool refuses to guess: remove the leases of the wrong kind (kcltool checkpoint export first) or use another %s", singleKey, multiKey, setting("table"))
	case !multi && multiCount > 0:
		return multiStreamTableError(cfg.Table,
			"it is a KCL multi-stream table (%d leases keyed account:stream:epoch:shardId, such as %q), and a single-stream run "+
				"would take its leases and read them as this stream's shards; run in multi-stream mode (leave out %s=false) "+
				"or use another %s", multiCount, multiKey, setting("multi-stream"), setting("table"))
	case multi && singleCount > 0:
		return multiStreamTableError(cfg.Table,
			"it is a single-stream table (%d leases keyed by shard id, such as %q), and a multi-stream run "+
				"(%s) cannot use it: the KCL does not convert one into the other; use a new %s for the multi-stream application, "+
				"or run one %s without %s", singleCount, singleKey, multiReason(cfg), setting("table"), setting("stream"), setting("multi-stream"))
	}
	if !multi {
		w.streams = []reshard.Stream{cfg.Stream}
		return nil
	}
	describer, ok := w.kin.(reshard.DescribeStreamSummaryAPI)
	if !ok {
		return errors.New("multi-stream mode needs DescribeStreamSummary on the Kinesis client")
	}
	inTable := map[string]string{} // account:name -> stream identifier in the table
	for _, l := range res.Leases {
		if name, ok := reshard.StreamIDName(l.StreamID()); ok {
			inTable[name] = l.StreamID()
		}
	}
	seen := map[string]bool{}
	var streams []reshard.Stream
	for _, s := range cfg.Streams {
		s, err := reshard.WithMultiStreamID(ctx, describer, s)
		if err != nil {
			return err
		}
		if seen[s.ID] {
			continue
		}
		seen[s.ID] = true
		name, _ := reshard.StreamIDName(s.ID)
		if other, ok := inTable[name]; ok && other != s.ID {
			return &MultiStreamTableError{Table: cfg.Table, Reason: fmt.Sprintf(
				"its leases of stream %s are for %q, but the stream now is %q (created at another time: deleted and created again, "+
					"or the application gave another creation epoch); kcltool will not continue from checkpoints of another stream: "+
					"reset them (kcltool checkpoint reset) or delete those leases", streamLabel(s), other, s.ID)}
		}
		streams = append(streams, s)
	}
	w.streams, w.multi = streams, true
	ids := make([]string, len(streams))
	for i, s := range streams {
		ids[i] = s.ID
	}
	w.log.Info("multi-stream mode: lease keys are account:stream:epoch:shardId", "streams", ids)
	return nil
}

func multiReason(cfg Config) phrase {
	if n := len(cfg.Streams); n > 1 {
		return func(name func(string) string) string { return fmt.Sprintf("%d %s flags", n, name("stream")) }
	}
	return func(name func(string) string) string { return name("multi-stream") }
}

// include is the coordinator's lease filter: a worker never takes, renews
// or writes a lease of a stream it was not given. In single-stream mode
// that is every multi-stream lease (a table with some is refused at start;
// this guards against ones written later).
func (w *Worker) include(l leasecore.Lease) bool {
	if !w.multi {
		return !l.IsMultiStream()
	}
	_, ok := w.streamOfLease(l)
	return ok
}

// streamOfLease is the stream a lease belongs to, among this worker's.
func (w *Worker) streamOfLease(l leasecore.Lease) (reshard.Stream, bool) {
	if !w.multi {
		return w.cfg.Stream, !l.IsMultiStream()
	}
	id := l.StreamID()
	for _, s := range w.streams {
		if s.ID == id {
			return s, true
		}
	}
	return reshard.Stream{}, false
}

// streamsLabel names the worker's streams in logs and metrics.
func (w *Worker) streamsLabel() string {
	names := make([]string, 0, len(w.streams))
	for _, s := range w.streams {
		names = append(names, streamLabel(s))
	}
	if len(names) == 0 {
		return streamLabel(w.cfg.Stream)
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}
