package cmd

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kcltool/kcltool/cmd/cmdutil"
)

// credsConfig is an AWS config file with two SSO profiles, one of each
// kind the SDK knows, and a plain profile without credentials.
const credsConfig = `[profile legacy-sso]
sso_start_url = https://legacy.example.com/start
sso_region = us-east-1
sso_account_id = 123456789012
sso_role_name = ReadOnly
region = eu-west-1

[profile session-sso]
sso_session = corp
sso_account_id = 123456789012
sso_role_name = ReadOnly
region = eu-west-1

[sso-session corp]
sso_start_url = https://corp.example.com/start
sso_region = us-east-1
sso_registration_scopes = sso:account:access

[profile bare]
region = eu-west-1
`

// expiredToken is what `aws sso login` caches, expired a long time ago.
const expiredToken = `{"accessToken":"expired","expiresAt":"2020-01-01T00:00:00Z","region":"us-east-1","startUrl":"https://corp.example.com/start"}`

// credsHome is a HOME with the config file above, an empty credentials
// file and the SSO token cache holding expired tokens for both profiles.
func credsHome(t *testing.T) (home string, env []string) {
	t.Helper()
	home = t.TempDir()
	aws := filepath.Join(home, ".aws")
	cache := filepath.Join(aws, "sso", "cache")
	if err := os.MkdirAll(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(path, body string) {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(aws, "config"), credsConfig)
	write(filepath.Join(aws, "credentials"), "")
	// The SDK names a cached token after the SHA-1 of the start URL (a
	// legacy profile) or of the sso-session's name.
	for _, key := range []string{"https://legacy.example.com/start", "corp"} {
		sum := sha1.Sum([]byte(key))
		write(filepath.Join(cache, hex.EncodeToString(sum[:])+".json"), expiredToken)
	}
	return home, []string{
		"HOME=" + home, "PATH=" + os.Getenv("PATH"),
		"AWS_CONFIG_FILE=" + filepath.Join(aws, "config"),
		"AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(aws, "credentials"),
		// Should credentials ever resolve, the request still goes nowhere.
		"AWS_ENDPOINT_URL_DYNAMODB=http://" + closedPort(t),
	}
}

// runWithEnv runs the built kcltool with exactly env and returns its exit
// code and stderr.
func runWithEnv(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(kcltoolBinary(t), args...)
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, stderr.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), stderr.String()
	}
	t.Fatal(err)
	return -1, ""
}

// Each way of having no usable credentials, region or profile ends in one
// line on stderr that says what to do, exit 1, and none of the SDK's text.
func TestCredentialErrorsAreOneLineWithTheFix(t *testing.T) {
	// An EC2 metadata service that refuses tokens makes the SDK fall back
	// to IMDSv1 with a warning it prints itself, unless routed elsewhere.
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.NotFound(w, r)
	}))
	t.Cleanup(imds.Close)
	noCreds := `^kcltool: error: no AWS credentials found: set AWS_PROFILE or --profile, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY \(on EC2, attach an instance role\)$`
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"unknown --profile", []string{"AWS_REGION=us-east-1"}, []string{"--profile", "nope"},
			`^kcltool: error: AWS profile "nope" not found: set --profile or AWS_PROFILE to a profile that exists \(aws configure list-profiles\)$`},
		{"unknown AWS_PROFILE", []string{"AWS_REGION=us-east-1", "AWS_PROFILE=nope"}, nil,
			`^kcltool: error: AWS profile "nope" not found: `},
		{"no credentials, IMDS disabled", []string{"AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true"}, nil, noCreds},
		{"no credentials, IMDS unreachable", []string{"AWS_REGION=us-east-1", "AWS_EC2_METADATA_SERVICE_ENDPOINT=http://" + closedPort(t)}, nil, noCreds},
		{"no credentials, IMDS falls back to v1", []string{"AWS_REGION=us-east-1", "AWS_EC2_METADATA_SERVICE_ENDPOINT=" + imds.URL}, nil, noCreds},
		{"profile without credentials", []string{"AWS_EC2_METADATA_DISABLED=true"}, []string{"--profile", "bare"}, noCreds},
		{"no region", []string{"AWS_ACCESS_KEY_ID=a", "AWS_SECRET_ACCESS_KEY=b", "AWS_EC2_METADATA_DISABLED=true"}, nil,
			`^kcltool: error: no AWS region: pass --region, set AWS_REGION, or set region in your AWS profile$`},
		{"expired SSO token, legacy profile", nil, []string{"--profile", "legacy-sso"},
			`^kcltool: error: the AWS SSO session of profile "legacy-sso" has expired or was never started: run aws sso login --profile legacy-sso$`},
		{"expired SSO token, sso-session profile", []string{"AWS_PROFILE=session-sso"}, nil,
			`^kcltool: error: the AWS SSO session of profile "session-sso" has expired or was never started: run aws sso login --profile session-sso$`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, env := credsHome(t)
			code, stderr := runWithEnv(t, append(env, tc.env...), append([]string{"leases", "ls", "--app", "orders"}, tc.args...)...)
			if code != cmdutil.ExitFailure {
				t.Errorf("exit %d, want 1", code)
			}
			if strings.Count(stderr, "\n") != 1 || !regexp.MustCompile(tc.want).MatchString(strings.TrimSuffix(stderr, "\n")) {
				t.Errorf("stderr:\n%s\nwant one line matching %s", stderr, tc.want)
			}
		})
	}
}

// With --log-level debug the SDK's own text follows in the log: its raw
// error and its warnings, as log lines, before the one line.
func TestCredentialErrorsShowSDKTextAtDebug(t *testing.T) {
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.NotFound(w, r)
	}))
	t.Cleanup(imds.Close)
	_, env := credsHome(t)
	code, stderr := runWithEnv(t, append(env, "AWS_REGION=us-east-1", "AWS_EC2_METADATA_SERVICE_ENDPOINT="+imds.URL),
		"leases", "ls", "--app", "orders", "--log-level", "debug", "--log-format", "json")
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if code != cmdutil.ExitFailure || !strings.HasPrefix(lines[len(lines)-1], "kcltool: error: no AWS credentials found") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	for _, want := range []string{
		`"level":"DEBUG","msg":"falling back to IMDSv1: `,
		`"source":"aws-sdk","sdk_level":"WARN"`,
		`"level":"DEBUG","msg":"AWS SDK error","error":"operation error DynamoDB: DescribeTable, get identity: get credentials: `,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("debug log lacks %s:\n%s", want, stderr)
		}
	}
	for _, l := range lines[:len(lines)-1] {
		if !strings.HasPrefix(l, "{") {
			t.Errorf("stderr line %q is not in the JSON log", l)
		}
	}
}
