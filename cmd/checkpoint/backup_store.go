package checkpoint

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/internal/awserr"
	"github.com/kcltool/kcltool/reset/backupstore"
)

// checkBackupDir refuses a malformed --backup-dir s3://... at once, as a
// usage error, before anything is read.
func checkBackupDir(flag string) error {
	if !backupstore.IsS3(flag) {
		return nil
	}
	if _, _, err := backupstore.ParseS3Prefix(flag); err != nil {
		return cmdutil.UsageErrorf("--backup-dir: %v", err)
	}
	return nil
}

// backupStore is --backup-dir as a store: an S3 bucket and prefix for
// s3://bucket/prefix, else the folder (BackupDir), which create makes
// when missing (before anything else happens, so that a folder that
// cannot be made fails the command at once).
func backupStore(ctx context.Context, f *cmdutil.Factory, flag string, create bool) (backupstore.Store, error) {
	if backupstore.IsS3(flag) {
		bucket, prefix, err := backupstore.ParseS3Prefix(flag)
		if err != nil {
			return nil, cmdutil.UsageErrorf("--backup-dir: %v", err)
		}
		c, err := f.S3(ctx)
		if err != nil {
			return nil, err
		}
		return backupstore.S3{API: c, Bucket: bucket, Prefix: prefix}, nil
	}
	if create {
		dir, err := makeBackupDir(f, flag)
		return backupstore.Local{Dir: dir}, err
	}
	// A listing shows absolute paths, for an import --file run from
	// anywhere.
	dir, err := BackupDir(f, flag)
	if err != nil {
		return nil, err
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return backupstore.Local{Dir: dir}, nil
}

// backupStoreError explains a store that failed to save (op "upload") or
// list: an S3 store names its bucket, the IAM action, and the way out. A
// local folder's error already names its path.
func backupStoreError(f *cmdutil.Factory, store backupstore.Store, op string, err error) error {
	s3, ok := store.(backupstore.S3)
	if !ok && op == "upload" {
		return fmt.Errorf("save the backup: %w (nothing was written)", err)
	}
	if !ok {
		return fmt.Errorf("backup folder: %w", err)
	}
	action, arn := "s3:PutObject", "arn:aws:s3:::"+s3.Bucket+"/"+s3.Prefix+"*"
	if op == "list" {
		action, arn = "s3:ListBucket", "arn:aws:s3:::"+s3.Bucket
	}
	region := ""
	if cfg, cerr := f.AWSConfig(context.Background()); cerr == nil {
		region = " in " + cfg.Region
	}
	hints := []string{
		fmt.Sprintf("check that bucket %q exists%s and that the caller may %s on %s (kcltool iam-policy with the same --backup-dir prints the policy)", s3.Bucket, region, action, arn),
	}
	if op == "upload" {
		hints = append(hints, "or pass a local --backup-dir")
	}
	if op == "upload" {
		// Only reset.Execute's Backup saves, and its error stops the
		// command before the first write.
		err = fmt.Errorf("save the backup to %s: %w (nothing was written)", store, err)
	} else {
		err = fmt.Errorf("list the backups in %s: %w", store, err)
	}
	return &cmdutil.HintError{Err: err, Hints: hints}
}

// readBackupFile reads checkpoint import's --file: a local file, or an
// S3 object (s3://bucket/key), such as the backup a reset run elsewhere
// saved to a shared bucket. A file or object that does not exist is a
// usage error, as a mistyped path is.
func readBackupFile(ctx context.Context, f *cmdutil.Factory, file string) ([]byte, error) {
	if !backupstore.IsS3(file) {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, cmdutil.UsageErrorf("--file: %v", err)
		}
		return data, nil
	}
	bucket, key, err := backupstore.ParseS3Object(file)
	if err != nil {
		return nil, cmdutil.UsageErrorf("--file: %v", err)
	}
	c, err := f.S3(ctx)
	if err != nil {
		return nil, err
	}
	r, err := backupstore.OpenS3Object(ctx, c, bucket, key)
	if err == nil {
		defer r.Close()
		var data []byte
		if data, err = io.ReadAll(r); err == nil {
			return data, nil
		}
	}
	if awserr.Is(err, "NoSuchKey") || awserr.Is(err, "NoSuchBucket") {
		return nil, cmdutil.UsageErrorf("--file %s: %v", file, err)
	}
	return nil, &cmdutil.HintError{
		Err:   fmt.Errorf("--file %s: %w", file, err),
		Hints: []string{fmt.Sprintf("check that the caller may s3:GetObject on arn:aws:s3:::%s/%s, and AWS_ENDPOINT_URL_S3 or --endpoint-url for a local S3 server", bucket, key)},
	}
}
