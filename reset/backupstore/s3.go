package backupstore

import (
	"bytes"
	"context"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// S3API is the part of the S3 client a bucket store calls: one PutObject
// per file saved, ListObjectsV2 pages to list, GetObject to read.
type S3API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
}

// S3 is a prefix of a bucket: the entries are the objects prefix+name.
type S3 struct {
	API    S3API
	Bucket string
	// Prefix is "" or ends with "/" (ParseS3Prefix).
	Prefix string

	// maxKeys is the page size of List; 0 is S3's 1000. Tests set it
	// small to page through a few objects.
	maxKeys int32
}

// Put uploads one object in a single PutObject: S3 shows an object only
// once its upload completed, so a failed upload leaves nothing behind.
func (s S3) Put(ctx context.Context, name string, data []byte) error {
	_, err := s.API.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(s.Bucket), Key: aws.String(s.Prefix + name),
		Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))),
		ContentType: aws.String("application/json"),
	})
	return err
}

// List pages through ListObjectsV2 under the prefix. The "/" delimiter
// keeps objects of deeper "folders" out, as a folder's listing keeps its
// sub-folders out.
func (s S3) List(ctx context.Context) ([]Entry, error) {
	p := s3.NewListObjectsV2Paginator(s.API, &s3.ListObjectsV2Input{
		Bucket: aws.String(s.Bucket), Prefix: aws.String(s.Prefix), Delimiter: aws.String("/"),
		MaxKeys: nonZero(s.maxKeys),
	})
	var out []Entry
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Contents {
			name := strings.TrimPrefix(aws.ToString(o.Key), s.Prefix)
			if name == "" || strings.Contains(name, "/") {
				continue
			}
			out = append(out, Entry{Name: name, Size: aws.ToInt64(o.Size)})
		}
	}
	return out, nil
}

// Open streams the object; closing it early (a listing reads only the
// head of each backup) drops the rest of the download.
func (s S3) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	return OpenS3Object(ctx, s.API, s.Bucket, s.Prefix+name)
}

// OpenS3Object streams one object: checkpoint import --file s3://....
func OpenS3Object(ctx context.Context, api S3API, bucket, key string) (io.ReadCloser, error) {
	out, err := api.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return nil, err
	}
	return out.Body, nil
}

// Path is the object's s3:// URL.
func (s S3) Path(name string) string { return "s3://" + s.Bucket + "/" + s.Prefix + name }

func (s S3) String() string { return "s3://" + s.Bucket + "/" + s.Prefix }

func nonZero(n int32) *int32 {
	if n == 0 {
		return nil
	}
	return &n
}
