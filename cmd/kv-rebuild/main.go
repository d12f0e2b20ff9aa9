// Command kv-rebuild drops a topic's key index and builds it again from the
// log: the repair tool for an index suspected wrong (for example after a
// bug or a restore). It opens the coordinator's state directly, so run it
// while the broker (embedded default) or cmd/coordinator that owns the
// state is stopped.
//
//	go run ./cmd/kv-rebuild --data-dir ./data --topic users                 # embedded default
//	go run ./cmd/kv-rebuild --coordinator-dir ./data-coordinator --topic users \
//	    --s3-bucket floe --s3-endpoint http://127.0.0.1:9000 --s3-path-style
package main

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/internal/cli"
	"github.com/floe-io/floe/objectstore"
)

func main() {
	os.Exit(cli.Exit(os.Stderr, "kv-rebuild", run(os.Args[1:])))
}

func run(args []string) error {
	fs := flag.NewFlagSet("kv-rebuild", flag.ContinueOnError)
	var (
		dataDir, coordDir, topic string
		s3                       objectstore.S3Options
	)
	fs.StringVar(&dataDir, "data-dir", "./data", "a broker's --data-dir (embedded default): coordinator state and, without S3, objects")
	fs.StringVar(&coordDir, "coordinator-dir", "", "the coordinator's Pebble directory (default: <data-dir>/coordinator)")
	fs.StringVar(&topic, "topic", "", "topic whose key index to rebuild (required)")
	fs.StringVar(&s3.Bucket, "s3-bucket", "", "S3 bucket of the objects (default: <data-dir>/objects)")
	fs.StringVar(&s3.Endpoint, "s3-endpoint", "", "S3 endpoint URL")
	fs.StringVar(&s3.Region, "s3-region", "", "S3 region")
	fs.BoolVar(&s3.PathStyle, "s3-path-style", false, "address buckets by path (MinIO)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := cli.NoArgs(fs, args); err != nil {
		return err
	}
	if err := cli.S3NeedsBucket(fs); err != nil {
		return err
	}
	if topic == "" {
		return errors.New("--topic is required")
	}
	if coordDir == "" {
		coordDir = filepath.Join(dataDir, "coordinator")
	}
	ctx := context.Background()
	var store coordinator.ObjectReader
	if s3.Bucket != "" {
		s, err := objectstore.NewS3(ctx, s3)
		if err != nil {
			return err
		}
		store = s
	} else {
		d, err := objectstore.NewDir(filepath.Join(dataDir, "objects"))
		if err != nil {
			return err
		}
		store = d
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	c, err := coordinator.Open(coordinator.Options{Dir: coordDir, Objects: store, Logger: log, KVIndexEnabled: true})
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.RebuildKVIndex(ctx, topic); err != nil {
		return err
	}
	log.Info("key index rebuilt from the log", "topic", topic)
	return nil
}
