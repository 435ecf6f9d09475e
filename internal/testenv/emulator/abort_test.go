package emulator

import (
	"context"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// A client that goes away while dynalite still reads its request body (as
// the fault proxy and kcltool's request deadlines do) must not kill the
// server: dynalite throws that error, and the preload survives it
// (scripts/loopback.cjs). Before, make test lost dynalite this way, and
// every later test in the package failed with "connection refused".
func TestServerSurvivesAbortedRequests(t *testing.T) {
	ddb := DynamoDB(t)
	u, err := url.Parse(DynamoDBEndpoint(t))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		c, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte("POST / HTTP/1.1\r\nHost: " + u.Host + "\r\nContent-Type: application/x-amz-json-1.0\r\n" +
			"X-Amz-Target: DynamoDB_20120810.ListTables\r\nContent-Length: 1000\r\n\r\n{\"Lim"))
		time.Sleep(50 * time.Millisecond) // let the server start reading the body
		c.(*net.TCPConn).SetLinger(0)     // close with a reset, as a dropped connection does
		c.Close()
	}
	time.Sleep(200 * time.Millisecond)
	if _, err := ddb.ListTables(context.Background(), &dynamodb.ListTablesInput{Limit: aws.Int32(1)}); err != nil {
		t.Fatalf("dynalite after aborted requests: %v", err)
	}
}
