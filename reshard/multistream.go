package reshard

import (
	"context"
	"fmt"
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
