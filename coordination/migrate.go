package coordination

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/awserr"
	"github.com/kcltool/kcltool/internal/clock"
	"github.com/kcltool/kcltool/leasecore"
)

// The operator's migration steps (`kcltool migration start | rollback |
// finalize`) as the KCL 3.5.1 deployment steps and scripts/KclMigrationTool.py
// take them: inspect plans them from a read, MigrationApply writes them.

// MigrationAction is one write of a migration step.
type MigrationAction string

const (
	// ActionCreateCV creates Migration3.0 where none exists, as a worker
	// entering its first client version does
	// (AbstractMigrationClientVersionState.ensureDdbStateMatchesClientVersion
	// → createCoordinatorStateIfNotExists).
	ActionCreateCV MigrationAction = "create-cv"
	// ActionUpdateCV changes cv, conditioned on the cv and mts read.
	ActionUpdateCV MigrationAction = "update-cv"
	// ActionAddIndex adds LeaseOwnerToLeaseKeyIndex by UpdateTable
	// (DynamoDBLeaseRefresher.createLeaseOwnerToLeaseKeyIndexIfNotExists)
	// and waits for it to be ACTIVE (waitUntilLeaseOwnerToLeaseKeyIndexExists).
	ActionAddIndex MigrationAction = "add-index"
	// ActionWaitIndex waits for an index some other writer is creating.
	ActionWaitIndex MigrationAction = "wait-index"
	// ActionWait waits before the index is deleted, so that every worker
	// has seen cv CLIENT_VERSION_2X and stopped querying it
	// (KclMigrationTool.py GSI_DELETION_WAIT_TIME_SECONDS).
	ActionWait MigrationAction = "wait"
	// ActionDeleteIndex deletes the index by UpdateTable (delete_gsi_if_exists).
	ActionDeleteIndex MigrationAction = "delete-index"
	// ActionDeleteTable deletes the WorkerMetricStats side table, as the
	// KCL 3.0–3.4 migration tool's rollback did (delete_worker_metrics_table_if_exists).
	ActionDeleteTable MigrationAction = "delete-table"
)

// MigrationWrite is one planned write.
type MigrationWrite struct {
	Action MigrationAction
	Table  string
	// KeyAttr is Migration3.0's key attribute in Table: leaseKey in the
	// lease table, key in the CoordinatorState side table.
	KeyAttr string
	// From is the cv read (the condition of an update); To the cv written.
	From, To string
	// FromAt and FromBy are the mts and mb read; mts is in the condition
	// too (zero: none read).
	FromAt time.Time
	FromBy string
	// By is mb of the write (MigrationBy).
	By string
	// History is h as read, newest first (MigrationState.addHistoryEntry).
	History []ClientVersionChange
	// ProvisionedThroughput is the index's, copied from a provisioned
	// table as the KCL does; nil on an on-demand table.
	ProvisionedThroughput *types.ProvisionedThroughput
	// Wait is ActionWait's duration.
	Wait time.Duration
	// Detail says the write in one line, for the plan.
	Detail string
}

// MigrationBy is mb of what kcltool writes, per command (the KCL's tool
// writes KclMigrationTool-rollback / -rollforward).
func MigrationBy(command string) string { return "kcltool-migration-" + command }

// MigrationApplyOptions are MigrationApply's hooks.
type MigrationApplyOptions struct {
	Clock clock.Clock
	// Poll is how often the index status is read while waiting
	// (the KCL polls every 10 s; 0 means 1 s).
	Poll time.Duration
	// IndexTimeout bounds the wait for ACTIVE (the KCL waits an hour).
	IndexTimeout time.Duration
	// Progress is told what is waited for, for an operator's progress line.
	Progress func(what string, waited time.Duration)
	// Done is told each write done, in order.
	Done func(i int)
}

// MigrationAPI is what MigrationApply calls.
type MigrationAPI interface {
	WriteAPI
	UpdateTable(ctx context.Context, params *dynamodb.UpdateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error)
	DeleteTable(ctx context.Context, params *dynamodb.DeleteTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteTableOutput, error)
}

// ErrMigrationStateChanged: Migration3.0 changed between the read and the
// write (a worker, a leader or another operator wrote it); nothing was
// overwritten.
var ErrMigrationStateChanged = errors.New("the migration state changed since it was read")

// MigrationApply makes the writes in order, stopping at the first that
// fails. A cv write is conditional on what the plan read, so a concurrent
// change is never overwritten (ErrMigrationStateChanged).
func MigrationApply(ctx context.Context, api MigrationAPI, writes []MigrationWrite, o MigrationApplyOptions) error {
	if o.Clock == nil {
		o.Clock = clock.RealClock()
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if o.IndexTimeout <= 0 {
		o.IndexTimeout = time.Hour
	}
	for i, w := range writes {
		var err error
		switch w.Action {
		case ActionCreateCV, ActionUpdateCV:
			err = writeClientVersion(ctx, api, w, o.Clock.Now())
		case ActionAddIndex:
			if err = addOwnerIndex(ctx, api, w); err == nil {
				err = waitIndex(ctx, api, w.Table, "ACTIVE", o)
			}
		case ActionWaitIndex:
			err = waitIndex(ctx, api, w.Table, "ACTIVE", o)
		case ActionWait:
			if o.Progress != nil {
				o.Progress(fmt.Sprintf("waiting %s for every worker to see cv %s before the index is deleted", w.Wait.Round(time.Second), ClientVersion2X), 0)
			}
			err = clock.Sleep(ctx, o.Clock, w.Wait)
		case ActionDeleteIndex:
			err = deleteOwnerIndex(ctx, api, w.Table)
		case ActionDeleteTable:
			_, err = api.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(w.Table)})
			if awserr.NotFound(err) {
				err = nil // gone already: the goal
			}
			if err != nil {
				err = fmt.Errorf("delete table %s: %w", w.Table, err)
			}
		default:
			err = fmt.Errorf("unknown migration write %q", w.Action)
		}
		if err != nil {
			return err
		}
		if o.Done != nil {
			o.Done(i)
		}
	}
	return nil
}

// writeClientVersion writes Migration3.0 as MigrationState.serialize /
// getDynamoUpdate do: cv, mb, mts (epoch ms) and h, the replaced state
// first (at most 10 entries); a new item also gets entityType and, as a
// worker's new MigrationState(workerId).update(cv) gives it, one history
// entry for CLIENT_VERSION_INIT.
func writeClientVersion(ctx context.Context, api WriteAPI, w MigrationWrite, now time.Time) error {
	history := []types.AttributeValue{}
	if w.Action == ActionCreateCV {
		history = append(history, historyAV("CLIENT_VERSION_INIT", w.byOr(), now))
		_, err := api.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(w.Table),
			Item: map[string]types.AttributeValue{
				w.KeyAttr:  &types.AttributeValueMemberS{Value: keyMigration},
				attrEntity: &types.AttributeValueMemberS{Value: EntityClientMigration},
				attrCV:     &types.AttributeValueMemberS{Value: w.To},
				attrMB:     &types.AttributeValueMemberS{Value: w.byOr()},
				attrMTS:    millisAV(now),
				"h":        &types.AttributeValueMemberL{Value: history},
			},
			ConditionExpression:      aws.String("attribute_not_exists(#k)"),
			ExpressionAttributeNames: map[string]string{"#k": w.KeyAttr},
		})
		return cvWriteError(w, err)
	}
	replacedAt := w.FromAt
	if replacedAt.IsZero() {
		replacedAt = now // as KclMigrationTool.py does for an item without mts
	}
	history = append(history, historyAV(w.From, w.fromBy(), replacedAt))
	for _, h := range w.History {
		if len(history) == 10 {
			break
		}
		history = append(history, historyAV(h.ClientVersion, h.By, h.At))
	}
	cond := "#k = :key AND cv = :from"
	values := map[string]types.AttributeValue{
		":key":  &types.AttributeValueMemberS{Value: keyMigration},
		":from": &types.AttributeValueMemberS{Value: w.From},
		":to":   &types.AttributeValueMemberS{Value: w.To},
		":mb":   &types.AttributeValueMemberS{Value: w.byOr()},
		":mts":  millisAV(now),
		":h":    &types.AttributeValueMemberL{Value: history},
	}
	if !w.FromAt.IsZero() {
		cond += " AND mts = :read"
		values[":read"] = millisAV(w.FromAt)
	}
	_, err := api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(w.Table),
		Key:                       map[string]types.AttributeValue{w.KeyAttr: &types.AttributeValueMemberS{Value: keyMigration}},
		UpdateExpression:          aws.String("SET cv = :to, mb = :mb, mts = :mts, h = :h"),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  map[string]string{"#k": w.KeyAttr},
		ExpressionAttributeValues: values,
	})
	return cvWriteError(w, err)
}

func cvWriteError(w MigrationWrite, err error) error {
	switch {
	case err == nil:
		return nil
	case awserr.ConditionFailed(err):
		read := "no item"
		if w.Action == ActionUpdateCV {
			read = "cv " + w.From
		}
		return fmt.Errorf("%s in %s: %w (read: %s); nothing was overwritten: read the new state and decide again", keyMigration, w.Table, ErrMigrationStateChanged, read)
	}
	return fmt.Errorf("write %s in %s: %w", keyMigration, w.Table, err)
}

func (w MigrationWrite) byOr() string {
	if w.By == "" {
		return "kcltool"
	}
	return w.By
}

// fromBy is the mb of the state replaced; HistoryEntry.deserialize needs
// one, so an item without it gets "Unknown", as KclMigrationTool.py writes.
func (w MigrationWrite) fromBy() string {
	if w.FromBy == "" {
		return "Unknown"
	}
	return w.FromBy
}

func historyAV(cv, by string, at time.Time) types.AttributeValue {
	return &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
		attrCV: &types.AttributeValueMemberS{Value: cv}, attrMB: &types.AttributeValueMemberS{Value: by}, attrMTS: millisAV(at)}}
}

func millisAV(t time.Time) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(t.UnixMilli(), 10)}
}

// addOwnerIndex is createLeaseOwnerToLeaseKeyIndexIfNotExists's UpdateTable:
// leaseOwner (hash) and leaseKey (range), both S, KEYS_ONLY, the table's
// throughput when provisioned, none when on demand. An index that another
// writer created meanwhile is no error: it is then waited for.
func addOwnerIndex(ctx context.Context, api MigrationAPI, w MigrationWrite) error {
	s := func(n string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(n), AttributeType: types.ScalarAttributeTypeS}
	}
	_, err := api.UpdateTable(ctx, &dynamodb.UpdateTableInput{
		TableName:            aws.String(w.Table),
		AttributeDefinitions: []types.AttributeDefinition{s(leasecore.AttrLeaseOwner), s(leasecore.AttrLeaseKey)},
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
			IndexName: aws.String(leasecore.KCL3IndexName),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(leasecore.AttrLeaseOwner), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(leasecore.AttrLeaseKey), KeyType: types.KeyTypeRange},
			},
			Projection:            &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
			ProvisionedThroughput: w.ProvisionedThroughput,
		}}},
	})
	if err == nil {
		return nil
	}
	if st, derr := indexStatus(ctx, api, w.Table); derr == nil && st != "" && st != "DELETING" {
		return nil
	}
	return fmt.Errorf("add index %s to %s: %w", leasecore.KCL3IndexName, w.Table, err)
}

func deleteOwnerIndex(ctx context.Context, api MigrationAPI, table string) error {
	_, err := api.UpdateTable(ctx, &dynamodb.UpdateTableInput{
		TableName: aws.String(table),
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Delete: &types.DeleteGlobalSecondaryIndexAction{
			IndexName: aws.String(leasecore.KCL3IndexName)}}},
	})
	if err == nil {
		return nil
	}
	if st, derr := indexStatus(ctx, api, table); derr == nil && (st == "" || st == "DELETING") {
		return nil // gone or going: the goal
	}
	return fmt.Errorf("delete index %s of %s: %w", leasecore.KCL3IndexName, table, err)
}

// indexStatus is LeaseOwnerToLeaseKeyIndex's status, "" when absent.
func indexStatus(ctx context.Context, api leasecore.DescribeTableAPI, table string) (string, error) {
	d, err := leasecore.DescribeTable(ctx, api, table)
	if err != nil {
		return "", err
	}
	if d == nil {
		return "", &leasecore.TableNotFoundError{Table: table, Region: leasecore.RegionOf(api)}
	}
	for _, g := range d.GlobalSecondaryIndexes {
		if aws.ToString(g.IndexName) == leasecore.KCL3IndexName {
			if g.IndexStatus == "" {
				return "ACTIVE", nil
			}
			return string(g.IndexStatus), nil
		}
	}
	return "", nil
}

// waitIndex polls the index until it has the status, as
// waitUntilLeaseOwnerToLeaseKeyIndexExists does (a poll, not a retry: a
// failed describe ends the wait).
func waitIndex(ctx context.Context, api leasecore.DescribeTableAPI, table, want string, o MigrationApplyOptions) error {
	start := o.Clock.Now()
	for {
		st, err := indexStatus(ctx, api, table)
		if err != nil {
			return err
		}
		if st == want {
			return nil
		}
		waited := o.Clock.Now().Sub(start)
		if waited > o.IndexTimeout {
			return fmt.Errorf("index %s of %s is still %s after %s", leasecore.KCL3IndexName, table, orAbsent(st), waited.Round(time.Second))
		}
		if o.Progress != nil {
			o.Progress(fmt.Sprintf("index %s of %s is %s, waiting for %s", leasecore.KCL3IndexName, table, orAbsent(st), want), waited)
		}
		if err := clock.Sleep(ctx, o.Clock, o.Poll); err != nil {
			return err
		}
	}
}

func orAbsent(s string) string {
	if s == "" {
		return "absent"
	}
	return s
}
