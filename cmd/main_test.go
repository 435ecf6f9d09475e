package cmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/internal/testenv/testfixtures"
)

// scriptRun numbers script runs within this test binary.
var scriptRun atomic.Int64

var update = flag.Bool("update", false, "rewrite the golden files in testdata/script")

func TestMain(m *testing.M) {
	testscript.Main(cleanupAfter{m}, map[string]func(){
		"kcltool": func() { os.Exit(mainRecordingCalls()) },
	})
	emulator.StopAll()
}

// fixturesDir is the repository's testdata/kcl: lease items as the Java KCL
// writes them.
func fixturesDir(t testing.TB) string { return testfixtures.Dir(t) }

// TestScripts runs the end-to-end scripts in testdata/script against the
// built binary's main and a local DynamoDB.
func TestScripts(t *testing.T) {
	ddbURL := emulator.DynamoDBEndpoint(t)
	deny := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"__type":"com.amazonaws.dynamodb.v20120810#AccessDeniedException","message":"User: arn:aws:iam::123456789012:user/ci is not authorized to perform: dynamodb:DescribeTable"}`)
	}))
	t.Cleanup(deny.Close)
	fixtures := fixturesDir(t)
	testscript.Run(t, testscript.Params{
		Dir:           filepath.Join("testdata", "script"),
		UpdateScripts: *update,
		Setup: func(env *testscript.Env) error {
			env.Setenv("AWS_ENDPOINT_URL_DYNAMODB", ddbURL)
			env.Setenv("AWS_ACCESS_KEY_ID", "local")
			env.Setenv("AWS_SECRET_ACCESS_KEY", "local")
			env.Setenv("AWS_REGION", emulator.Region)
			env.Setenv("AWS_EC2_METADATA_DISABLED", "true")
			env.Setenv("AWS_CONFIG_FILE", os.DevNull)
			env.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
			env.Setenv("DENY_URL", deny.URL)
			env.Setenv("FIXTURES", fixtures)
			env.Setenv(callsDirEnv, callsDir)
			// A unique suffix keeps scripts' tables apart in the shared server,
			// also across -count runs.
			env.Setenv("T", fmt.Sprintf("%s-%d", filepath.Base(env.WorkDir), scriptRun.Add(1)))
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"seed": cmdSeed(ddbURL),
			"code": cmdCode,
		},
	})
}

// cmdSeed implements `seed TABLE FILE...`: create a KCL-shaped lease table
// and put every item of the DynamoDB-JSON files (one item per file, or one
// per line in .jsonl) exactly as written.
func cmdSeed(ddbURL string) func(ts *testscript.TestScript, neg bool, args []string) {
	return func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) < 1 {
			ts.Fatalf("usage: seed TABLE [FILE...]")
		}
		client := dynamodb.NewFromConfig(emulator.Config(), func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(ddbURL) })
		emulator.CreateLeaseTable(scriptTB{ts}, client, args[0])
		for _, file := range args[1:] {
			for _, item := range readItems(ts, ts.MkAbs(file)) {
				_, err := client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(args[0]), Item: item})
				ts.Check(err)
			}
		}
	}
}

// cmdCode implements `code N PROGRAM ARGS...`: run the program and require
// exit status N exactly (testscript's ! only says "non-zero"). Its stdout and
// stderr stay available to the following stdout/stderr checks.
func cmdCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: code N PROGRAM [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}
