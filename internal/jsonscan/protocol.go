package jsonscan

import (
	"bytes"
	"context"
	"io"
	"sync/atomic"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Protocol wraps an SDK client's protocol so that successful answers of one
// operation, output type *E, are decoded by Decode. When Decode fails the
// same bytes go to the SDK's decoder, so the result is the SDK's either
// way; Fallbacks counts those answers, for tests.
type Protocol[E any, P interface {
	*E
	smithy.Deserializable
}] struct {
	smithyhttp.ClientProtocol
	Decode    func(body []byte, out P) error
	Fallbacks *atomic.Int64
}

// DeserializeResponse implements smithyhttp.ClientProtocol.
func (p Protocol[E, P]) DeserializeResponse(ctx context.Context, schema *smithy.OperationSchema, reg *smithy.TypeRegistry,
	resp *smithyhttp.Response, out smithy.Deserializable) error {
	o, ok := out.(P)
	if !ok || resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return p.ClientProtocol.DeserializeResponse(ctx, schema, reg, resp, out)
	}
	// The body is read into a buffer of its own: New shares its bytes
	// with the strings Decode returns.
	buf := bytes.NewBuffer(make([]byte, 0, max(resp.ContentLength, 0)+bytes.MinRead))
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return &smithy.DeserializationError{Err: err}
	}
	body := buf.Bytes()
	if p.Decode(body, o) == nil {
		return nil
	}
	p.Fallbacks.Add(1)
	var zero E
	*o = zero
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return p.ClientProtocol.DeserializeResponse(ctx, schema, reg, resp, out)
}
