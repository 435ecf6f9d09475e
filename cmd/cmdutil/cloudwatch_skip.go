package cmdutil

import (
	"net"
	"net/url"
	"strings"
)

// LocalCloudWatchSkip is why doctor and top leave CloudWatch out when kcltool
// talks to local servers (make up, the tests' servers, a local DynamoDB),
// or "" to read it. There is no local CloudWatch: with the DynamoDB or
// Kinesis endpoint on this machine and none given for CloudWatch, the
// SDK would send GetMetricData to the real service (or to the local
// DynamoDB, under --endpoint-url), and the run ended in a DNS,
// connection or signature failure after its retries. This says so in
// one info finding instead. Endpoints given in a config file's profile
// are not read here; those users get the failure as before.
func LocalCloudWatchSkip(getenv func(string) string, endpointURL string) string {
	if getenv("AWS_ENDPOINT_URL_CLOUDWATCH") != "" && !ignoreConfiguredEndpoints(getenv) {
		return ""
	}
	var local []string
	if isLocalEndpoint(endpointURL) {
		local = append(local, "--endpoint-url "+endpointURL)
	}
	if !ignoreConfiguredEndpoints(getenv) {
		for _, name := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_KINESIS"} {
			if v := getenv(name); isLocalEndpoint(v) {
				local = append(local, name+"="+v)
			}
		}
	}
	if len(local) == 0 {
		return ""
	}
	return "the endpoints are local (" + strings.Join(local, ", ") + ") and no CloudWatch endpoint is given (AWS_ENDPOINT_URL_CLOUDWATCH)"
}

// ignoreConfiguredEndpoints is the SDK's switch that makes it ignore the
// AWS_ENDPOINT_URL variables (--endpoint-url still counts).
func ignoreConfiguredEndpoints(getenv func(string) string) bool {
	return strings.EqualFold(getenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"), "true")
}

// isLocalEndpoint: the URL's host is localhost or a loopback address
// (127.0.0.0/8, ::1).
func isLocalEndpoint(endpoint string) bool {
	if endpoint == "" {
		return false
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
