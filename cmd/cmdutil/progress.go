package cmdutil

import (
	"context"
	"fmt"
	"github.com/kcltool/kcltool/internal/clock"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kcltool/kcltool/reset"
)

// Progress tells an operator at a terminal what long work is doing: one
// line on stderr, redrawn in place, cleared when the work ends so that the
// results that follow start on a clean line. When stderr is not a terminal
// it writes nothing at all: logs, pipes and CI output hold results and
// warnings only.
//
// The domain packages report through plain callbacks (done, total); this is
// the one place that turns them into text.
type Progress struct {
	Term  io.Writer // nil when stderr is not a terminal: every method is a no-op
	clock clock.Clock

	mu    sync.Mutex
	shown bool   // a line is on the screen
	last  string // the text drawn last
}

// NewProgress returns a progress line on f's stderr, silent unless stderr
// is a terminal.
func NewProgress(f *Factory) *Progress {
	p := &Progress{clock: f.Clock}
	if f.IO.ErrTTY {
		p.Term = f.IO.ErrOut
	}
	if p.clock == nil {
		p.clock = clock.RealClock()
	}
	return p
}

// Show redraws the line with the text.
func (p *Progress) Show(format string, args ...any) {
	if p.Term == nil {
		return
	}
	text := "kcltool: " + fmt.Sprintf(format, args...)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown && text == p.last {
		return
	}
	// \r returns to the start of the line, ESC[K clears what a longer
	// earlier text left behind.
	fmt.Fprintf(p.Term, "\r%s\x1b[K", text)
	p.shown, p.last = true, text
}

// Counter returns a callback for the domain packages' Progress options:
// "kcltool: <verb> 3 of 12 <noun>". It is safe for concurrent use.
func (p *Progress) Counter(verb, noun string) func(done, total int) {
	if p.Term == nil {
		return nil
	}
	if noun != "" {
		noun = " " + noun
	}
	return func(done, total int) { p.Show("%s %d of %d%s", verb, done, total, noun) }
}

// Done clears the line; a later show draws a new one. Callers end the
// work, goroutines included, before they call it.
func (p *Progress) Done() {
	if p.Term == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.Term, "\r\x1b[K")
	}
	p.shown = false
}

// ScanProgress counts the Scan pages and items of a lease-table read and
// shows them: at once, or with quietFor > 0 only from the second page on or
// once the read has taken that long, so that the usual small table shows
// nothing. It wraps the client rather than reaching into the scan, which
// needs no hook in leasecore.
type ScanProgress struct {
	LeaseTableReader
	p     *Progress
	table string

	pages, items atomic.Int64
	loud         atomic.Bool
	stop         chan struct{}
	stopped      chan struct{} // closed when the timer's goroutine is gone
	stopOnce     sync.Once
}

// LeaseTableReader is what the read commands call on a lease table.
type LeaseTableReader interface {
	DescribeTable(ctx context.Context, params *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	Scan(ctx context.Context, params *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// WatchScan wraps api so that its Scan calls are shown on p. Call end when
// the read is over.
func WatchScan(api LeaseTableReader, p *Progress, table string, quietFor time.Duration) *ScanProgress {
	s := &ScanProgress{LeaseTableReader: api, p: p, table: table, stop: make(chan struct{}), stopped: make(chan struct{})}
	if p.Term == nil || quietFor <= 0 {
		close(s.stopped)
		if p.Term != nil {
			s.loud.Store(true)
			s.draw()
		}
		return s
	}
	// A slow first page would otherwise show nothing until it arrives.
	t := p.clock.NewTimer(quietFor)
	go func() {
		defer close(s.stopped)
		defer t.Stop()
		select {
		case <-t.C():
			s.loud.Store(true)
			s.draw()
		case <-s.stop:
		}
	}()
	return s
}

// Scan reads one page through the wrapped client and counts it.
func (s *ScanProgress) Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	out, err := s.LeaseTableReader.Scan(ctx, in, optFns...)
	if err == nil && s.p.Term != nil {
		s.items.Add(int64(len(out.Items)))
		if s.pages.Add(1) > 1 {
			s.loud.Store(true)
		}
		s.draw()
	}
	return out, err
}

func (s *ScanProgress) draw() {
	if !s.loud.Load() {
		return
	}
	pages, items := s.pages.Load(), s.items.Load()
	if pages == 0 {
		s.p.Show("reading lease table %q...", s.table)
		return
	}
	s.p.Show("reading lease table %q: %s, %s", s.table, Plural(int(pages), "page"), Plural(int(items), "item"))
}

// End stops the timer and clears the line.
func (s *ScanProgress) End() {
	s.stopOnce.Do(func() { close(s.stop) })
	<-s.stopped // a timer firing just now draws before the line is cleared
	s.p.Done()
}

// WatchedTable is a lease table for reset and import whose scans are shown
// by scan; its writes go straight through.
type WatchedTable struct {
	reset.TableAPI
	Progress *ScanProgress
}

// Scan reads one page through the progress counter.
func (w WatchedTable) Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	return w.Progress.Scan(ctx, in, optFns...)
}
