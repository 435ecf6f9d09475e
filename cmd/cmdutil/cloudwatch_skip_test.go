package cmdutil

import (
	"strings"
	"testing"
)

// TestLocalCloudWatchSkip: CloudWatch is skipped when the endpoint flag or
// an endpoint variable names this machine and no CloudWatch endpoint is
// given; read otherwise.
func TestLocalCloudWatchSkip(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      map[string]string
		flag     string
		skip     bool
		mentions string
	}{
		{name: "real AWS", env: map[string]string{}},
		{name: "make up's servers", env: map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:18000", "AWS_ENDPOINT_URL_KINESIS": "http://127.0.0.1:18001"},
			skip: true, mentions: "AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:18000, AWS_ENDPOINT_URL_KINESIS=http://127.0.0.1:18001"},
		{name: "--endpoint-url localhost", flag: "http://localhost:8000", skip: true, mentions: "--endpoint-url http://localhost:8000"},
		{name: "AWS_ENDPOINT_URL on ::1", env: map[string]string{"AWS_ENDPOINT_URL": "http://[::1]:4566"}, skip: true, mentions: "AWS_ENDPOINT_URL=http://[::1]:4566"},
		{name: "a CloudWatch endpoint given", env: map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:18000", "AWS_ENDPOINT_URL_CLOUDWATCH": "http://127.0.0.1:9999"}},
		{name: "remote endpoints", env: map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": "https://dynamodb.eu-west-1.amazonaws.com", "AWS_ENDPOINT_URL": "http://10.0.0.5:8000"}},
		{name: "a host named like localhost", flag: "http://localhost.example.com"},
		{name: "variables ignored by the SDK", env: map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:18000", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"}},
	} {
		why := LocalCloudWatchSkip(func(k string) string { return tc.env[k] }, tc.flag)
		if (why != "") != tc.skip || !strings.Contains(why, tc.mentions) {
			t.Errorf("%s: skip reason %q, want skip %v naming %q", tc.name, why, tc.skip, tc.mentions)
		}
	}
}
