package reshard

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/kcltool/kcltool/leasecore"
)

// DescribeStreamSummaryAPI is what WithMultiStreamID calls.
type DescribeStreamSummaryAPI interface {
	DescribeStreamSummary(ctx context.Context, params *kinesis.DescribeStreamSummaryInput, optFns ...func(*kinesis.Options)) (*kinesis.DescribeStreamSummaryOutput, error)
}

// WithMultiStreamID returns s with ID set to the KCL's serialized stream
// identifier "<account>:<stream>:<creationEpoch>", as KCL multi-stream
// applications build it from the stream's ARN and creation time in epoch
// seconds (StreamIdentifier.multiStreamInstance). An ID already set is
// kept.
func WithMultiStreamID(ctx context.Context, api DescribeStreamSummaryAPI, s Stream) (Stream, error) {
	if s.ID != "" {
		return s, nil
	}
	in := &kinesis.DescribeStreamSummaryInput{}
	if s.ARN != "" {
		in.StreamARN = aws.String(s.ARN)
	} else {
		in.StreamName = aws.String(s.Name)
	}
	out, err := api.DescribeStreamSummary(ctx, in)
	if err != nil {
		return s, fmt.Errorf("describe stream %s: %w", streamLabel(s), err)
	}
	d := out.StreamDescriptionSummary
	if d == nil || d.StreamCreationTimestamp == nil {
		return s, fmt.Errorf("describe stream %s: no creation time in the answer", streamLabel(s))
	}
	arn := aws.ToString(d.StreamARN)
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || !strings.HasPrefix(parts[5], "stream/") {
		return s, fmt.Errorf("describe stream %s: unexpected stream ARN %q", streamLabel(s), arn)
	}
	id := fmt.Sprintf("%s:%s:%d", parts[4], strings.TrimPrefix(parts[5], "stream/"), d.StreamCreationTimestamp.Unix())
	if !leasecore.ValidStreamIdentifier(id) {
		return s, fmt.Errorf("stream %s: %q is not a valid KCL stream identifier", streamLabel(s), id)
	}
	s.ID = id
	return s, nil
}

// StreamIDName splits a serialized stream identifier into its account and
// stream name (the part before the creation epoch).
func StreamIDName(id string) (accountAndName string, ok bool) {
	i := strings.LastIndexByte(id, ':')
	if i <= 0 {
		return "", false
	}
	return id[:i], true
}

// TableStreams returns the streams a multi-stream lease table's leases name,
// sorted by identifier, each with its name and identifier; none for a
// single-stream table. It parses every identifier with the one checked
// parser (leasecore.Lease.MultiStream), so a lease naming its stream in a
// shape the KCL cannot read gives an error naming the lease, not a crash.
// Leases from DecodeLease never do: it reports such items as malformed.
func TableStreams(leases []leasecore.Lease) ([]Stream, error) {
	ids := map[string]leasecore.StreamIdentifier{}
	for _, l := range leases {
		id, ok, err := l.MultiStream()
		if err != nil {
			return nil, err
		}
		if ok {
			// As written, not id.String(): an epoch with leading zeros
			// must still match the lease keys.
			ids[l.StreamID()] = id
		}
	}
	out := make([]Stream, 0, len(ids))
	for key, id := range ids {
		out = append(out, Stream{Name: id.Name, ID: key})
	}
	slices.SortFunc(out, func(a, b Stream) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}
