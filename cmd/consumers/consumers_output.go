package consumers

import (
	"fmt"
	"strings"
	"time"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/fanout"
)

// ConsumerJSON is the documented JSON shape of one stream consumer
// (docs/json.md; the key list is jsonSchemas["consumers ls"]). Keys are
// the AWS names, as DescribeStreamConsumer gives them.
type ConsumerJSON struct {
	ConsumerName              string `json:"ConsumerName"`
	ConsumerARN               string `json:"ConsumerARN"`
	ConsumerStatus            string `json:"ConsumerStatus"`
	ConsumerCreationTimestamp string `json:"ConsumerCreationTimestamp"`
	StreamARN                 string `json:"StreamARN"`
}

// CSVColumns are consumers ls's CSV header: the JSON keys.
var CSVColumns = []string{"ConsumerName", "ConsumerARN", "ConsumerStatus", "ConsumerCreationTimestamp", "StreamARN"}

// consumerTime is RFC 3339 in UTC, to the second, as the other commands
// write times.
func consumerTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func consumersJSON(cs []fanout.StreamConsumer) []ConsumerJSON {
	out := make([]ConsumerJSON, 0, len(cs))
	for _, c := range cs {
		out = append(out, ConsumerJSON{ConsumerName: c.Name, ConsumerARN: c.ARN, ConsumerStatus: string(c.Status),
			ConsumerCreationTimestamp: consumerTime(c.CreatedAt), StreamARN: c.StreamARN})
	}
	return out
}

// consumersView is what consumers ls and deregister print: the consumers,
// and for ls the lines under the table.
type consumersView struct {
	stream    string
	consumers []fanout.StreamConsumer
	// listing is the whole stream's listing for ls (the summary and the
	// limit note under the table); nil for deregister's one row.
	listing *fanout.ConsumerListing
	now     func() time.Time
}

func renderConsumers(f *cmdutil.Factory, format string, v consumersView) error {
	return cmdutil.NewPrinter(f.IO, format).Print(cmdutil.Output{
		Items: func() any { return consumersJSON(v.consumers) },
		CSV:   CSVColumns,
		Rows: func() [][]string {
			var recs [][]string
			for _, c := range consumersJSON(v.consumers) {
				recs = append(recs, []string{c.ConsumerName, c.ConsumerARN, c.ConsumerStatus, c.ConsumerCreationTimestamp, c.StreamARN})
			}
			return recs
		},
		Text: func(p *cmdutil.Printer) error { return consumersTable(p, v) },
	})
}

func consumersTable(p *cmdutil.Printer, v consumersView) error {
	header := []string{"CONSUMER-NAME", "STATUS", "CREATED", "AGE"}
	if p.Wide() {
		header = append(header, "CONSUMER-ARN")
	}
	var recs [][]string
	for _, c := range v.consumers {
		rec := []string{c.Name, string(c.Status), consumerTime(c.CreatedAt), cmdutil.HumanDuration(v.now().Sub(c.CreatedAt))}
		if p.Wide() {
			rec = append(rec, c.ARN)
		}
		recs = append(recs, rec)
	}
	if len(recs) == 0 {
		p.Empty("stream %q has no registered consumers (none reads it with enhanced fan-out)", v.stream)
	} else if err := p.Table(header, recs); err != nil {
		return err
	}
	if v.listing == nil {
		return nil
	}
	st := p.Styles()
	if len(recs) > 0 {
		p.Blank()
	}
	for _, l := range p.Wrap("", fmt.Sprintf("%s on stream %s (Kinesis allows %d per stream)", cmdutil.Plural(len(v.consumers), "consumer"), v.stream, fanout.MaxConsumersPerStream)) {
		p.Println(st.Dim.Render(l))
	}
	var notActive []string
	for _, c := range v.consumers {
		if !c.Active() {
			notActive = append(notActive, fmt.Sprintf("%s (%s)", c.Name, c.Status))
		}
	}
	if len(notActive) > 0 {
		p.Println(st.Warn.Render("not ACTIVE, so not readable with SubscribeToShard: " + strings.Join(notActive, ", ")))
	}
	if note := limitNote(v.listing); note != "" {
		p.Println(st.Warn.Render(note))
	}
	return nil
}

// limitNote warns when a stream has few consumer registrations left; ""
// otherwise.
func limitNote(l *fanout.ConsumerListing) string {
	if !l.NearLimit() {
		return ""
	}
	n := len(l.Consumers)
	if n >= fanout.MaxConsumersPerStream {
		return fmt.Sprintf("at the limit: %d of %d consumers; registering another fails with LimitExceededException: deregister the consumers of retired applications (kcltool consumers deregister)",
			n, fanout.MaxConsumersPerStream)
	}
	return fmt.Sprintf("near the limit: %d of %d consumers, %d more can register; deregister the consumers of retired applications (kcltool consumers deregister)",
		n, fanout.MaxConsumersPerStream, fanout.MaxConsumersPerStream-n)
}
