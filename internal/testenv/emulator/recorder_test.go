package emulator

import (
	"context"
	"errors"
	"net"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// TestRecorderLogsEachCallOnceAndPassesItOn: real SDK requests through the
// recorder reach the servers unchanged and are logged once each, with the
// operation, the signed region and the resource they name.
func TestRecorderLogsEachCallOnceAndPassesItOn(t *testing.T) {
	dir := t.TempDir()
	log := NewCallLog(dir, []string{"leases", "ls", "--app", "x"}, map[string]string{"KCLTOOL_REGION": "us-east-1"})
	ctx := context.Background()
	var urls []string
	for _, target := range []string{DynamoDBEndpoint(t), KinesisEndpoint(t), NewCloudWatch(t).URL} {
		r, err := NewRecorder(target, log)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Close)
		urls = append(urls, r.URL)
	}
	ddb := dynamodb.NewFromConfig(Config(), func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(urls[0]) })
	table := Name(t, "rec")
	CreateLeaseTable(t, ddb, table)
	for range 2 {
		if _, err := ddb.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table)}); err != nil {
			t.Fatal(err)
		}
	}
	// A Query on an index names the index: IAM judges it on the index's ARN.
	kcl3 := Name(t, "rec3")
	CreateKCL3LeaseTable(t, ddb, kcl3)
	if _, err := ddb.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(kcl3), IndexName: aws.String("LeaseOwnerToLeaseKeyIndex"),
		KeyConditionExpression:    aws.String("leaseOwner = :w"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":w": &ddbtypes.AttributeValueMemberS{Value: "w1"}}}); err != nil {
		t.Fatal(err)
	}
	kin := kinesis.NewFromConfig(Config(), func(o *kinesis.Options) { o.BaseEndpoint = aws.String(urls[1]) })
	stream := Name(t, "rec")
	CreateStream(t, kin, stream, 1)
	cw := cloudwatch.NewFromConfig(Config(), func(o *cloudwatch.Options) { o.BaseEndpoint = aws.String(urls[2]) })
	if _, err := cw.PutMetricData(ctx, &cloudwatch.PutMetricDataInput{Namespace: aws.String("orders"),
		MetricData: []cwtypes.MetricDatum{{MetricName: aws.String("m"), Value: aws.Float64(1)}}}); err != nil {
		t.Fatal(err)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	invs, err := ReadCallLogs(dir)
	if err != nil || len(invs) != 1 {
		t.Fatalf("%d invocations, %v", len(invs), err)
	}
	inv := invs[0]
	if !slices.Equal(inv.Argv, []string{"leases", "ls", "--app", "x"}) || inv.Env["KCLTOOL_REGION"] != "us-east-1" {
		t.Errorf("header: %+v", inv)
	}
	scans := 0
	for _, c := range inv.Calls {
		if c.Action == "Scan" {
			scans++
		}
	}
	for _, want := range []Call{
		{Service: "dynamodb", Action: "Scan", Region: Region, Table: table},
		{Service: "dynamodb", Action: "Query", Region: Region, Table: kcl3, Index: "LeaseOwnerToLeaseKeyIndex"},
		{Service: "kinesis", Action: "CreateStream", Region: Region, Stream: stream},
		{Service: "cloudwatch", Action: "PutMetricData", Region: Region, Namespace: "orders"},
	} {
		if !slices.Contains(inv.Calls, want) {
			t.Errorf("no %+v in %+v", want, inv.Calls)
		}
	}
	if scans != 1 {
		t.Errorf("a repeated call is logged %d times", scans)
	}
}

// TestRecorderDropsWhatTheUpstreamDrops: a failed upstream reaches the
// client as a broken connection, as it would without the recorder, not as
// an answer.
func TestRecorderDropsWhatTheUpstreamDrops(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	t.Cleanup(func() { l.Close() })
	r, err := NewRecorder("http://"+l.Addr().String(), NewCallLog(t.TempDir(), nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	ddb := dynamodb.NewFromConfig(Config(), func(o *dynamodb.Options) {
		o.BaseEndpoint, o.RetryMaxAttempts = aws.String(r.URL), 1
	})
	_, err = ddb.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String("x")})
	var re *smithyhttp.ResponseError
	if err == nil || errors.As(err, &re) && re.HTTPStatusCode() != 0 {
		t.Fatalf("want a broken connection, not an answer: %v", err)
	}
}
