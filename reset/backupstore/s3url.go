package backupstore

import (
	"fmt"
	"strings"
)

// IsS3 says whether a --backup-dir or --file names S3 (s3://...) rather
// than a local path. The scheme is matched in any case, so that S3://b is
// refused as a bad S3 location instead of becoming a local folder "S3:".
func IsS3(s string) bool { return len(s) >= 5 && strings.EqualFold(s[:5], "s3://") }

// ParseS3 splits s3://bucket/key into its bucket and key. The key may be
// empty (s3://bucket, s3://bucket/). A bucket name breaking S3's rules
// (3 to 63 lower-case letters, digits, dots and hyphens, a letter or digit
// at each end), an empty segment (s3://b//k) or a missing bucket is an
// error that says the accepted form.
func ParseS3(s string) (bucket, key string, err error) {
	if !IsS3(s) {
		return "", "", fmt.Errorf("%q is not an S3 location: use s3://bucket/prefix", s)
	}
	rest := s[5:]
	bucket, key, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", fmt.Errorf("%q names no bucket: use s3://bucket/prefix", s)
	}
	if why := badBucket(bucket); why != "" {
		return "", "", fmt.Errorf("%q: bucket %q %s", s, bucket, why)
	}
	if strings.Contains(key, "//") || strings.HasPrefix(key, "/") {
		return "", "", fmt.Errorf("%q has an empty path segment (//): use s3://bucket/prefix", s)
	}
	return bucket, key, nil
}

// ParseS3Prefix parses a --backup-dir s3://bucket/prefix: the prefix gets
// the "/" that separates it from the file names, so s3://b/team and
// s3://b/team/ are the same folder.
func ParseS3Prefix(s string) (bucket, prefix string, err error) {
	bucket, prefix, err = ParseS3(s)
	if err != nil {
		return "", "", err
	}
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return bucket, prefix, nil
}

// ParseS3Object parses an s3://bucket/key that names one object, as
// checkpoint import --file takes it.
func ParseS3Object(s string) (bucket, key string, err error) {
	bucket, key, err = ParseS3(s)
	if err != nil {
		return "", "", err
	}
	if key == "" || strings.HasSuffix(key, "/") {
		return "", "", fmt.Errorf("%q names a bucket or prefix, not a file: use s3://bucket/prefix/file", s)
	}
	return bucket, key, nil
}

func badBucket(b string) string {
	if len(b) < 3 || len(b) > 63 {
		return "must be 3 to 63 characters long"
	}
	for _, r := range b {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '-') {
			return fmt.Sprintf("has %q: S3 bucket names hold only lower-case letters, digits, dots and hyphens", r)
		}
	}
	if first, last := b[0], b[len(b)-1]; first == '.' || first == '-' || last == '.' || last == '-' {
		return "must begin and end with a letter or digit"
	}
	return ""
}
