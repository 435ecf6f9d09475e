package cmd

import (
	"bytes"
	"context"
	"github.com/kcltool/kcltool/internal/clock"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/internal/testenv/clocktest"
	"github.com/kcltool/kcltool/leasecore"
)

func progressFactory(tty bool, clock clock.Clock) (*cmdutil.Factory, *lockedBuffer) {
	errOut := &lockedBuffer{}
	f := cmdutil.NewFactory(&cmdutil.IOStreams{Out: &bytes.Buffer{}, ErrOut: errOut, ErrTTY: tty}, func(string) string { return "" })
	if clock != nil {
		f.Clock = clock
	}
	return f, errOut
}

// On a terminal the counter redraws one line in place and done clears it;
// anywhere else nothing at all is written.
func TestProgressOnlyOnATerminal(t *testing.T) {
	f, errOut := progressFactory(true, nil)
	p := cmdutil.NewProgress(f)
	count := p.Counter("probed", "shards")
	count(1, 2)
	count(1, 2) // the same text is not drawn twice
	count(2, 2)
	p.Done()
	want := "\rkcltool: probed 1 of 2 shards\x1b[K\rkcltool: probed 2 of 2 shards\x1b[K\r\x1b[K"
	if got := errOut.String(); got != want {
		t.Errorf("on a terminal stderr got %q, want %q", got, want)
	}

	f, errOut = progressFactory(false, nil)
	p = cmdutil.NewProgress(f)
	if count := p.Counter("probed", "shards"); count != nil {
		t.Error("off a terminal the counter is not nil: the domain packages would do work for nothing")
	}
	p.Show("probed %d of %d", 1, 2)
	p.Done()
	s := cmdutil.WatchScan(pagedTable{pages: 3}, p, "orders", 0)
	if _, err := leasecore.ScanTable(context.Background(), s, "orders", leasecore.ScanOptions{}); err != nil {
		t.Fatal(err)
	}
	s.End()
	if errOut.String() != "" {
		t.Errorf("off a terminal stderr got %q, want nothing", errOut.String())
	}
}

// A read shown only when it is large says nothing for one page, speaks from
// the second page on, and speaks after quietFor even while the first page
// is still on its way.
func TestScanProgressQuietForSmallTables(t *testing.T) {
	ctx := context.Background()
	clock := clocktest.New(time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC))
	f, errOut := progressFactory(true, clock)

	s := cmdutil.WatchScan(pagedTable{pages: 1}, cmdutil.NewProgress(f), "small", time.Second)
	if _, err := leasecore.ScanTable(ctx, s, "small", leasecore.ScanOptions{}); err != nil {
		t.Fatal(err)
	}
	s.End()
	if errOut.String() != "" {
		t.Errorf("a one-page table showed %q", errOut.String())
	}

	s = cmdutil.WatchScan(pagedTable{pages: 3}, cmdutil.NewProgress(f), "large", time.Second)
	if _, err := leasecore.ScanTable(ctx, s, "large", leasecore.ScanOptions{}); err != nil {
		t.Fatal(err)
	}
	s.End()
	if got := errOut.String(); !strings.Contains(got, `kcltool: reading lease table "large": 3 pages, 6 items`) || strings.Contains(got, "1 page,") ||
		!strings.HasSuffix(got, "\r\x1b[K") {
		t.Errorf("a three-page table showed %q", got)
	}

	f, errOut = progressFactory(true, clock)
	s = cmdutil.WatchScan(pagedTable{pages: 1}, cmdutil.NewProgress(f), "slow", time.Second)
	if err := clock.WaitTimers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(errOut.String(), `reading lease table "slow"...`) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	s.End()
	if got := errOut.String(); got != "\rkcltool: reading lease table \"slow\"...\x1b[K\r\x1b[K" {
		t.Errorf("a slow first page showed %q", got)
	}
}

// pagedTable answers Scan with pages of two items each.
type pagedTable struct{ pages int }

func (p pagedTable) DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return &dynamodb.DescribeTableOutput{Table: &types.TableDescription{}}, nil
}

func (p pagedTable) Scan(_ context.Context, in *dynamodb.ScanInput, _ ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	page := 0
	if k, ok := in.ExclusiveStartKey["page"].(*types.AttributeValueMemberN); ok {
		page = int(k.Value[0] - '0')
	}
	out := &dynamodb.ScanOutput{}
	for i := range 2 {
		key := string(rune('a'+page)) + string(rune('0'+i))
		out.Items = append(out.Items, map[string]types.AttributeValue{"leaseKey": &types.AttributeValueMemberS{Value: key}})
	}
	if page+1 < p.pages {
		out.LastEvaluatedKey = map[string]types.AttributeValue{"page": &types.AttributeValueMemberN{Value: string(rune('0' + page + 1))}}
	}
	return out, nil
}
