package javaprops

import (
	"reflect"
	"strings"
	"testing"
)

func parse(t *testing.T, src string) map[string]string {
	t.Helper()
	p, err := Parse(strings.NewReader(src))
	if err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	m := map[string]string{}
	for _, e := range p.Entries {
		m[e.Key] = e.Value
	}
	return m
}

// TestPropertiesSyntax has one case per rule of the javadoc of
// java.util.Properties.load(Reader).
func TestPropertiesSyntax(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      map[string]string
	}{
		{"equals", "a = b\n", map[string]string{"a": "b"}},
		{"equals without spaces", "a=b", map[string]string{"a": "b"}},
		{"colon", "a: b\n", map[string]string{"a": "b"}},
		{"whitespace separator", "a   b\n", map[string]string{"a": "b"}},
		{"tab and form feed separate", "a\t\fb\n", map[string]string{"a": "b"}},
		{"whitespace then one separator", "a : = b\n", map[string]string{"a": "= b"}},
		{"second equals is value", "a==b\n", map[string]string{"a": "=b"}},
		{"key alone", "a\n", map[string]string{"a": ""}},
		{"key and separator alone", "a =\n", map[string]string{"a": ""}},
		{"trailing whitespace kept", "a = b  \n", map[string]string{"a": "b  "}},
		{"leading whitespace of line", "   \t a = b\n", map[string]string{"a": "b"}},
		{"hash comment", "# a = b\nc = d\n", map[string]string{"c": "d"}},
		{"bang comment", "  ! a = b\nc = d\n", map[string]string{"c": "d"}},
		{"hash inside a value", "a = b # not a comment\n", map[string]string{"a": "b # not a comment"}},
		{"blank lines", "\n   \n\t\na = b\n\n", map[string]string{"a": "b"}},
		{"comment does not continue", "# c \\\na = b\n", map[string]string{"a": "b"}},
		{"continuation", "a = one, \\\n    two\n", map[string]string{"a": "one, two"}},
		{"continuation twice", "a = 1\\\n 2\\\n\t3\n", map[string]string{"a": "123"}},
		{"continued line starting with hash", "a = 1\\\n  # 2\n", map[string]string{"a": "1# 2"}},
		{"continued key", "ab\\\n  c = d\n", map[string]string{"abc": "d"}},
		{"even backslashes do not continue", "a = b\\\\\nc = d\n", map[string]string{"a": `b\`, "c": "d"}},
		{"three backslashes continue", "a = b\\\\\\\n c\n", map[string]string{"a": `b\c`}},
		{"empty continuation line ends it", "a = b\\\n\nc = d\n", map[string]string{"a": "b", "c": "d"}},
		{"continuation at end of file", "a = b\\", map[string]string{"a": "b"}},
		{"CRLF", "a = b\r\nc = d\r\n", map[string]string{"a": "b", "c": "d"}},
		{"CR alone", "a = b\rc = d", map[string]string{"a": "b", "c": "d"}},
		{"CRLF continuation", "a = b\\\r\n  c\r\n", map[string]string{"a": "bc"}},
		{"escapes", `a = x\ty\nz\rw\fv`, map[string]string{"a": "x\ty\nz\rw\fv"}},
		{"unicode escape", `a = caf\u00e9 \u00E9`, map[string]string{"a": "café é"}},
		{"surrogate pair", `a = \ud83d\ude00`, map[string]string{"a": "😀"}},
		{"escaped separators in key", `a\:b\=c\ d = e`, map[string]string{"a:b=c d": "e"}},
		{"escaped separators in value", `a = \:\=\ x`, map[string]string{"a": ":= x"}},
		{"escaped leading space in value", `a =\  b`, map[string]string{"a": "  b"}},
		{"backslash", `a = c:\\dir\\x`, map[string]string{"a": `c:\dir\x`}},
		{"unknown escape is the char", `a = \z\b\#\!\"`, map[string]string{"a": `zb#!"`}},
		{"escaped hash starts a key", `\#a = b`, map[string]string{"#a": "b"}},
		{"last value wins", "a = 1\na = 2\n", map[string]string{"a": "2"}},
		{"UTF-8 text", "a = naïve\n", map[string]string{"a": "naïve"}},
		{"key is case sensitive", "A = 1\na = 2\n", map[string]string{"A": "1", "a": "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := parse(t, tc.src); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Parse(%q) = %q, want %q", tc.src, got, tc.want)
			}
		})
	}
}

func TestMalformedUnicodeEscape(t *testing.T) {
	for _, src := range []string{`a = \u00`, `a = \u00zz`, "a = 1\nb = \\uXYZW\n"} {
		_, err := Parse(strings.NewReader(src))
		if err == nil || !strings.Contains(err.Error(), `malformed \uxxxx`) {
			t.Errorf("Parse(%q) error = %v, want malformed \\uxxxx", src, err)
		}
	}
	_, err := Parse(strings.NewReader("a = 1\nb = \\u12\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "line 2:") {
		t.Errorf("error %v does not name line 2", err)
	}
}

func TestLinesAndOrder(t *testing.T) {
	p, err := Parse(strings.NewReader("# c\nb = 1\n\na = x\\\n y\nb = 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{{Key: "b", Value: "2", Line: 2}, {Key: "a", Value: "xy", Line: 4}}
	if !reflect.DeepEqual(p.Entries, want) {
		t.Errorf("Entries = %+v, want %+v", p.Entries, want)
	}
	if v, ok := p.Get("a"); !ok || v != "xy" {
		t.Errorf("Get(a) = %q, %v", v, ok)
	}
	if _, ok := p.Get("c"); ok {
		t.Error("Get(c) found a comment")
	}
}

// TestRealWorldFiles reads the sample properties files of AWS's client
// libraries, written from their documented form.
func TestRealWorldFiles(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      map[string]string
	}{
		{
			// aws-kcl (Node.js) samples/basic_sample/consumer/sample.properties
			name: "aws-kcl node sample",
			src: `# The script that abides by the multi-language protocol. This script will
# be executed by the MultiLangDaemon, which will communicate with this script
# over STDIN and STDOUT according to the multi-language protocol.
executableName = node sample_kcl_app.js

# The name of an Amazon Kinesis stream to process.
streamName = kclnodejssample

# Used by the KCL as the name of this application. Will be used as the name
# of an Amazon DynamoDB table which will store the lease and checkpoint
# information for workers with this application name
applicationName = kclnodejssample

# Users can change the credentials provider the KCL will use to retrieve credentials.
# The DefaultAWSCredentialsProviderChain checks several other providers, which is
# described here:
# http://docs.aws.amazon.com/AWSJavaSDK/latest/javadoc/com/amazonaws/auth/DefaultAWSCredentialsProviderChain.html
AwsCredentialsProvider = DefaultAWSCredentialsProviderChain

# Appended to the user agent of the KCL. Does not impact the functionality of the
# KCL in any other way.
processingLanguage = nodejs/0.10

# Valid options at TRIM_HORIZON or LATEST.
# See http://docs.aws.amazon.com/kinesis/latest/APIReference/API_GetShardIterator.html#API_GetShardIterator_RequestSyntax
initialPositionInStream = TRIM_HORIZON

# The following properties are also available for configuring the KCL Worker that is created
# by the MultiLangDaemon.

# The KCL defaults to us-east-1
#regionName = us-east-1

# Fail over time in milliseconds. A worker which does not renew it's lease within this time interval
# will be regarded as having problems and it's shards will be assigned to other workers.
# For applications that have a large number of shards, this msy be set to a higher number to reduce
# the number of DynamoDB IOPS required for tracking leases
#failoverTimeMillis = 10000

# A worker id that uniquely identifies this worker among all workers using the same applicationName
# If this isn't provided a MultiLangDaemon instance will assign a unique workerId to itself.
#workerId =

# Max records to fetch from Kinesis in a single GetRecords call.
#maxRecords = 10000
`,
			want: map[string]string{
				"executableName": "node sample_kcl_app.js", "streamName": "kclnodejssample",
				"applicationName": "kclnodejssample", "AwsCredentialsProvider": "DefaultAWSCredentialsProviderChain",
				"processingLanguage": "nodejs/0.10", "initialPositionInStream": "TRIM_HORIZON",
			},
		},
		{
			// amazon-kinesis-client-python samples/sample.properties
			name: "kclpy sample",
			src: `# The script that abides by the multi-language protocol. This script will
# be executed by the MultiLangDaemon, which will communicate with this script
# over STDIN and STDOUT according to the multi-language protocol.
executableName = sample_kclpy_app.py

# The Stream arn: arn:aws:kinesis:<region>:<account id>:stream/<stream name>
# Important: streamArn takes precedence over streamName if both are set
streamArn = arn:aws:kinesis:us-east-5:000000000000:stream/kclpysample

# The name of an Amazon Kinesis stream to process.
# Important: streamArn takes precedence over streamName if both are set
streamName = kclpysample

# Used by the KCL as the name of this application. Will be used as the name
# of an Amazon DynamoDB table which will store the lease and checkpoint
# information for workers with this application name
applicationName = PythonKCLSample

# Users can change the credentials provider the KCL will use to retrieve credentials.
# Expected key name (case-sensitive):
# AwsCredentialsProvider = / AwsCredentialsProviderDynamoDB = / AwsCredentialsProviderCloudWatch =
# The DefaultCredentialsProvider checks several other providers, which is
# described here:
# https://sdk.amazonaws.com/java/api/2.0.0-preview-11/software/amazon/awssdk/auth/credentials/DefaultCredentialsProvider.html
AwsCredentialsProvider = DefaultCredentialsProvider

# Appended to the user agent of the KCL. Does not impact the functionality of the
# KCL in any other way.
processingLanguage = python/3.8

# Valid options at TRIM_HORIZON or LATEST.
# See http://docs.aws.amazon.com/kinesis/latest/APIReference/API_GetShardIterator.html#API_GetShardIterator_RequestSyntax
initialPositionInStream = TRIM_HORIZON

# To specify an initial timestamp from which to start processing records, please specify timestamp value for 'initiatPositionInStreamExtended',
# and uncomment below line with right timestamp value.
# See more from 'Timestamp' under http://docs.aws.amazon.com/kinesis/latest/APIReference/API_GetShardIterator.html#API_GetShardIterator_RequestSyntax
#initialPositionInStreamExtended = 1636609142

# The following properties are also available for configuring the KCL Worker that is created
# by the MultiLangDaemon.

# The KCL defaults to us-east-1
regionName = us-east-5

# Fail over time in milliseconds. A worker which does not renew it's lease within this time interval
# will be regarded as having problems and it's shards will be assigned to other workers.
# For applications that have a large number of shards, this msy be set to a higher number to reduce
# the number of DynamoDB IOPS required for tracking leases
#failoverTimeMillis = 10000

# Max records to fetch from Kinesis in a single GetRecords call.
#maxRecords = 10000

# Idle time between record reads in milliseconds.
#idleTimeBetweenReadsInMillis = 1000

# Enables applications flush/checkpoint (if they have some data "in progress", but don't get new data for while)
#callProcessRecordsEvenForEmptyRecordList = false

# Interval in milliseconds between polling to check for parent shard completion.
# Polling frequently will take up more DynamoDB IOPS (when there are leases for shards waiting on
# completion of parent shards).
#parentShardPollIntervalMillis = 10000

# Cleanup leases upon shards completion (don't wait until they expire in Kinesis).
# Keeping leases takes some tracking/resources (e.g. they need to be renewed, assigned), so by default we try
# to delete the ones we don't need any longer.
#cleanupLeasesUponShardCompletion = true

# Backoff time in milliseconds for Amazon Kinesis Client Library tasks (in the event of failures).
#taskBackoffTimeMillis = 500

# Buffer metrics for at most this long before publishing to CloudWatch.
#metricsBufferTimeMillis = 10000

# Buffer at most this many metrics before publishing to CloudWatch.
#metricsMaxQueueSize = 10000

# KCL will validate client provided sequence numbers with a call to Amazon Kinesis before checkpointing for calls
# to RecordProcessorCheckpointer#checkpoint(String) by default.
#validateSequenceNumberBeforeCheckpointing = true

# The maximum number of active threads for the MultiLangDaemon to permit.
# If a value is provided then a FixedThreadPool is used with the maximum
# active threads set to the provided value. If a non-positive integer or no
# value is provided a CachedThreadPool is used.
#maxActiveThreads = -1
`,
			want: map[string]string{
				"executableName": "sample_kclpy_app.py", "streamArn": "arn:aws:kinesis:us-east-5:000000000000:stream/kclpysample",
				"streamName": "kclpysample", "applicationName": "PythonKCLSample",
				"AwsCredentialsProvider": "DefaultCredentialsProvider", "processingLanguage": "python/3.8",
				"initialPositionInStream": "TRIM_HORIZON", "regionName": "us-east-5",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := parse(t, tc.src); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}
