package backupstore

import (
	"strings"
	"testing"
)

func TestParseS3Prefix(t *testing.T) {
	for _, tc := range []struct{ in, bucket, prefix string }{
		{"s3://team-backups", "team-backups", ""},
		{"s3://team-backups/", "team-backups", ""},
		{"s3://team-backups/kcltool", "team-backups", "kcltool/"},
		{"s3://team-backups/kcltool/", "team-backups", "kcltool/"},
		{"s3://my.bucket-1/a/b", "my.bucket-1", "a/b/"},
		{"S3://team-backups/x", "team-backups", "x/"},
	} {
		b, p, err := ParseS3Prefix(tc.in)
		if err != nil || b != tc.bucket || p != tc.prefix {
			t.Errorf("ParseS3Prefix(%q) = %q, %q, %v; want %q, %q", tc.in, b, p, err, tc.bucket, tc.prefix)
		}
	}
}

// Each bad form is refused with a message that names the problem.
func TestParseS3Refuses(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"s3://", "names no bucket"},
		{"s3:///prefix", "names no bucket"},
		{"s3://ab", "3 to 63"},
		{"s3://" + strings.Repeat("a", 64), "3 to 63"},
		{"s3://Team", "lower-case"},
		{"s3://team_backups/x", "lower-case"},
		{"s3://-team/x", "begin and end"},
		{"s3://team./x", "begin and end"},
		{"s3://team//x", "empty path segment"},
		{"s3://team/a//b", "empty path segment"},
		{"/tmp/backups", "not an S3 location"},
	} {
		if _, _, err := ParseS3Prefix(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseS3Prefix(%q) = %v; want an error with %q", tc.in, err, tc.want)
		}
	}
}

func TestParseS3Object(t *testing.T) {
	b, k, err := ParseS3Object("s3://team/kcltool/kcltool-reset-t-1.backup.json")
	if err != nil || b != "team" || k != "kcltool/kcltool-reset-t-1.backup.json" {
		t.Fatalf("got %q %q %v", b, k, err)
	}
	for _, in := range []string{"s3://team", "s3://team/", "s3://team/kcltool/"} {
		if _, _, err := ParseS3Object(in); err == nil || !strings.Contains(err.Error(), "not a file") {
			t.Errorf("ParseS3Object(%q) = %v; want a not-a-file error", in, err)
		}
	}
}

func TestIsS3(t *testing.T) {
	for in, want := range map[string]bool{"s3://b": true, "S3://b": true, "s3:/b": false, "./s3://b": false, "": false, "s3:": false} {
		if IsS3(in) != want {
			t.Errorf("IsS3(%q) = %v", in, !want)
		}
	}
}
