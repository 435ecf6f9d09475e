package backupstore

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

func TestMain(m *testing.M) { os.Exit(emulator.Main(m)) }

// Both stores keep the same contract: what Put saved, List shows with its
// size (only the entries directly in the store) and Open reads back.
func TestStores(t *testing.T) {
	ctx := context.Background()
	c := emulator.S3(t)
	bucket := emulator.Bucket(t)
	emulator.CreateBucket(t, c, bucket)
	// Neighbours List must leave out: a deeper "folder" and a sibling
	// prefix that starts with the same letters.
	for _, k := range []string{"team/sub/deeper.json", "teammate.json", "team-other/x.json"} {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(k), Body: nil}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, st := range map[string]Store{
		"local": Local{Dir: dir},
		// Pages of two objects: five files take three ListObjectsV2 pages.
		"s3": S3{API: c, Bucket: bucket, Prefix: "team/", maxKeys: 2},
	} {
		t.Run(name, func(t *testing.T) {
			want := []Entry{}
			for _, n := range []string{"a.json", "b.json", "c.json", "d.json", "e.json"} {
				data := []byte(`{"name":"` + n + `"}`)
				if err := st.Put(ctx, n, data); err != nil {
					t.Fatalf("put %s: %v", n, err)
				}
				want = append(want, Entry{Name: n, Size: int64(len(data))})
			}
			got, err := st.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			slices.SortFunc(got, func(a, b Entry) int { return cmpString(a.Name, b.Name) })
			if !slices.Equal(got, want) {
				t.Fatalf("List = %v, want %v", got, want)
			}
			r, err := st.Open(ctx, "c.json")
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if b, _ := io.ReadAll(r); string(b) != `{"name":"c.json"}` {
				t.Fatalf("Open read %q", b)
			}
		})
	}
}

func TestStorePaths(t *testing.T) {
	s := S3{Bucket: "team", Prefix: "kcltool/"}
	if got := s.Path("x.json"); got != "s3://team/kcltool/x.json" {
		t.Errorf("S3 path %q", got)
	}
	if got := (S3{Bucket: "team"}).Path("x.json"); got != "s3://team/x.json" {
		t.Errorf("S3 path without prefix %q", got)
	}
	if got := (Local{Dir: "rel"}).Path("x.json"); got != filepath.Join("rel", "x.json") {
		t.Errorf("local path %q", got)
	}
}

// A folder or bucket prefix that holds nothing yet lists empty, not an
// error: nobody has saved a backup there.
func TestListEmpty(t *testing.T) {
	got, err := Local{Dir: filepath.Join(t.TempDir(), "none")}.List(context.Background())
	if err != nil || len(got) != 0 {
		t.Fatalf("missing folder: %v %v", got, err)
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
