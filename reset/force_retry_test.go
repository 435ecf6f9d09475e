package reset

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// renewAfterRead renews the lease (its counter moves, as a live worker's
// renewal does) after every read, so that each forced write fails its
// condition; it counts the writes.
type renewAfterRead struct {
	TableAPI
	w      *world
	writes int
}

func (r *renewAfterRead) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opt ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	out, err := r.TableAPI.GetItem(ctx, in, opt...)
	_, uerr := r.w.ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(r.w.table),
		Key:                       in.Key,
		UpdateExpression:          aws.String("SET leaseCounter = leaseCounter + :one"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
	})
	if uerr != nil {
		r.w.t.Errorf("renew: %v", uerr)
	}
	return out, err
}

func (r *renewAfterRead) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opt ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	r.writes++
	return r.TableAPI.UpdateItem(ctx, in, opt...)
}

// A forced write to a lease renewed between every read and write is tried
// once and then ForceRetries times more, each after a fresh read, and is
// then skipped as changed.
func TestForcedWriteRereadsForceRetriesTimes(t *testing.T) {
	w := newTable(t)
	w.lease(shardID(0), "", "100")
	p := w.positionsPlan(map[string]string{shardID(0): "TRIM_HORIZON"})
	api := &renewAfterRead{TableAPI: w.ddb, w: w}
	x, err := Execute(w.ctx, api, p, ExecOptions{Sample: time.Millisecond, Force: true, ForceRetries: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r := x.Results[0]; r.Outcome != OutcomeSkipped || api.writes != 3 {
		t.Fatalf("result %+v after %d writes; want skipped after 3 (1 + ForceRetries 2)", r, api.writes)
	}
}
