package reshard

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// A new application whose listing never covers the hash key space (a proxy
// drops the second of two shards from every answer) lists the shards
// HashRangeAttempts times in all, and then fails naming that count.
func TestSyncListsAgainUntilHashRangeAttempts(t *testing.T) {
	t.Parallel()
	st := emulator.NewStreamAndTable(t, 2)
	proxy := newFaultProxy(t, emulator.KinesisEndpoint(t), "ListShards", "", 0)
	var listings atomic.Int32
	proxy.rewrite = func(body []byte) []byte {
		listings.Add(1)
		var out map[string]any
		if err := json.Unmarshal(body, &out); err != nil {
			return body
		}
		if shards, ok := out["Shards"].([]any); ok && len(shards) == 2 {
			out["Shards"] = shards[:1]
		}
		b, _ := json.Marshal(out)
		return b
	}
	kin := kinesis.NewFromConfig(noRetryConfig(), func(o *kinesis.Options) { o.BaseEndpoint = aws.String(proxy.URL) })
	opt := SyncOptions{Stream: Stream{Name: st.Stream}, Initial: Latest(), HashRangeAttempts: 3, HashRangeDelay: time.Millisecond}
	_, err := SyncShards(context.Background(), kin, st.DynamoDB, Table{Name: st.Table}, opt)
	if err == nil || !strings.Contains(err.Error(), "after 3 listings") || listings.Load() != 3 {
		t.Fatalf("err %v after %d listings; want the tiling error after 3", err, listings.Load())
	}
}
