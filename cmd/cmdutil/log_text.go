package cmdutil

import (
	"context"
	"io"
	"log/slog"
	"slices"
)

// textHandler is the text log a person reads at a terminal: slog's own
// text handler (levels, quoting, groups written as a.b=…) with each
// line's attributes put in reading order. After time, level and msg come
// the error and the handler's own words (leadKeys), then every other
// attribute in the order it was given. A handler's stderr line used to
// come after the worker, the shard and two 56-digit sequence numbers,
// more than 260 characters in.
//
// Why a handler and not a ReplaceAttr: ReplaceAttr sees one attribute at
// a time and cannot move it, and slog's text handler writes a logger's
// With attributes before the record's own, so the worker and the shard
// would still come first. Nor are the call sites reordered: the order
// would have to be kept right by every future log call, in the runner,
// which knows nothing of terminals. So this handler keeps the With
// attributes and groups itself, and hands slog's text handler one record
// that holds them all, in order, under their groups.
type textHandler struct {
	inner slog.Handler // slog's text handler, never given With attributes or groups
	goas  []groupOrAttrs
}

// groupOrAttrs is one WithGroup or WithAttrs call, in the order made.
type groupOrAttrs struct {
	group string
	attrs []slog.Attr
}

// leadKeys are the attributes written first, in this order: the error of
// a failure, then what the handler itself said (a stderr line, its stdout).
var leadKeys = []string{"err", "error", "line", "output"}

// sequenceKeys are the attributes that hold a Kinesis sequence number,
// shortened in text logs as on a terminal's tables (Shorten): the batch's
// range (runner/processor), a lease's checkpoint (runner: reading shard,
// shard sync, trimmed shard), the MultiLang child's checkpoint
// (sequenceNumber), and the fetchers' positions (at, after; runner,
// runner/retrieval). They are known by key, never guessed from digits: a
// count or an id must stay whole. JSON logs keep every number whole.
var sequenceKeys = map[string]bool{
	"first_sequence": true, "last_sequence": true, "checkpoint": true,
	"sequenceNumber": true, "at": true, "after": true,
}

func newTextHandler(w io.Writer, opts *slog.HandlerOptions) *textHandler {
	o := *opts
	next := o.ReplaceAttr
	o.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
		a = shortenSequence(groups, a)
		if next != nil {
			a = next(groups, a)
		}
		return a
	}
	return &textHandler{inner: slog.NewTextHandler(w, &o)}
}

// shortenSequence shortens a sequence-number attribute's string value;
// a duration under the same key (handoff's "after") is left alone.
func shortenSequence(_ []string, a slog.Attr) slog.Attr {
	if sequenceKeys[a.Key] && a.Value.Kind() == slog.KindString {
		a.Value = slog.StringValue(Shorten(a.Value.String(), true))
	}
	return a
}

func (h *textHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h *textHandler) WithAttrs(as []slog.Attr) slog.Handler {
	if len(as) == 0 {
		return h
	}
	return h.with(groupOrAttrs{attrs: slices.Clone(as)})
}

func (h *textHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return h.with(groupOrAttrs{group: name})
}

func (h *textHandler) with(g groupOrAttrs) *textHandler {
	return &textHandler{inner: h.inner, goas: append(slices.Clip(h.goas), g)}
}

// Handle nests the record's attributes under the open groups, with the
// With attributes of each level before them, as slog would, then puts
// each level's lead attributes first.
func (h *textHandler) Handle(ctx context.Context, r slog.Record) error {
	attrs := make([]slog.Attr, 0, r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool {
		attrs = append(attrs, a)
		return true
	})
	for i := len(h.goas) - 1; i >= 0; i-- {
		g := h.goas[i]
		if g.group != "" {
			// An empty group is dropped by slog, as for WithGroup.
			attrs = []slog.Attr{{Key: g.group, Value: slog.GroupValue(attrs...)}}
			continue
		}
		attrs = append(slices.Clone(g.attrs), attrs...)
	}
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	out.AddAttrs(leadFirst(attrs)...)
	return h.inner.Handle(ctx, out)
}

// leadFirst moves the lead attributes to the front, in leadKeys' order,
// keeping the others' order; inside groups too.
func leadFirst(attrs []slog.Attr) []slog.Attr {
	out := make([]slog.Attr, 0, len(attrs))
	for _, k := range leadKeys {
		for _, a := range attrs {
			if a.Key == k {
				out = append(out, a)
			}
		}
	}
	for _, a := range attrs {
		if slices.Contains(leadKeys, a.Key) {
			continue
		}
		if a.Value.Kind() == slog.KindGroup {
			a.Value = slog.GroupValue(leadFirst(a.Value.Group())...)
		}
		out = append(out, a)
	}
	return out
}
