// Command floe-segment prints a segment object (tiered/): its trailer, each
// batch, and both indexes. It reads a local file (on the embedded default,
// segments are under <data-dir>/objects/tiered/), or with --s3-bucket the
// object KEY from S3 or MinIO (credentials from the AWS environment, as the
// broker's).
//
//	go run ./cmd/floe-segment FILE
//	go run ./cmd/floe-segment --s3-bucket B --s3-endpoint http://127.0.0.1:9000 --s3-path-style KEY
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/floe-io/floe/internal/cli"
	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/record"
	"github.com/floe-io/floe/tiered"
)

func main() {
	os.Exit(cli.Exit(os.Stderr, "floe-segment", run(os.Args[1:], os.Stdout)))
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("floe-segment", flag.ContinueOnError)
	var s3 objectstore.S3Options
	fs.StringVar(&s3.Bucket, "s3-bucket", "", "read KEY from this S3 bucket instead of a local FILE")
	fs.StringVar(&s3.Endpoint, "s3-endpoint", "", "S3 endpoint URL, e.g. http://127.0.0.1:9000 for MinIO (default: AWS)")
	fs.StringVar(&s3.Region, "s3-region", "", "S3 region (default: AWS config chain, else us-east-1)")
	fs.BoolVar(&s3.PathStyle, "s3-path-style", false, "address buckets by path (MinIO)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: floe-segment FILE | floe-segment --s3-bucket B [--s3-endpoint URL] [--s3-path-style] KEY")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := cli.S3NeedsBucket(fs); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("want one FILE or KEY")
	}
	var (
		obj []byte
		err error
	)
	if s3.Bucket != "" {
		ctx := context.Background()
		var st *objectstore.S3
		if st, err = objectstore.NewS3(ctx, s3); err == nil {
			obj, err = st.GetRange(ctx, fs.Arg(0), 0, -1)
		}
	} else {
		obj, err = os.ReadFile(fs.Arg(0))
	}
	if err != nil {
		return err
	}
	return inspect(obj, out)
}

// inspect prints segment object obj to out.
func inspect(obj []byte, out io.Writer) error {
	tr, err := tiered.ParseTrailer(obj)
	if err != nil {
		return err
	}
	if tr.Size() != int64(len(obj)) {
		return fmt.Errorf("%w: %d bytes, trailer says %d", tiered.ErrCorrupt, len(obj), tr.Size())
	}
	idx, err := tiered.ParseIndexes(obj[tr.IndexPos():], tr)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "trailer: version %d, offsets %d-%d, max timestamp %d, %d batches, data %d bytes, offset index %d+%d, time index %d+%d, crc %#08x, size %d\n",
		tr.Version, tr.BaseOffset, tr.LastOffset, tr.MaxTimestamp, tr.BatchCount, tr.DataLength,
		tr.OffsetIndexPos, tr.OffsetIndexLen, tr.TimeIndexPos, tr.TimeIndexLen, tr.CRC, tr.Size())
	batches, n, err := tiered.ReadBatches(obj[:tr.DataLength])
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "batches:")
	pos := 0
	for _, b := range batches {
		h, err := record.ParseHeader(b)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "  position %d: offsets %d-%d, %d records, max timestamp %d, codec %s, epoch %d, %d bytes\n",
			pos, h.BaseOffset, h.BaseOffset+int64(h.LastOffsetDelta), h.NumRecords, h.MaxTimestamp, h.Codec(), h.PartitionLeaderEpoch, len(b))
		pos += len(b)
	}
	if uint64(len(batches)) != tr.BatchCount || uint64(n) != tr.DataLength {
		return fmt.Errorf("%w: %d batches in %d bytes, trailer says %d in %d", tiered.ErrCorrupt, len(batches), n, tr.BatchCount, tr.DataLength)
	}
	fmt.Fprintln(out, "offset index:")
	for _, e := range idx.Offsets {
		fmt.Fprintf(out, "  offset %d -> position %d\n", e.Offset, e.Position)
	}
	fmt.Fprintln(out, "time index:")
	for _, e := range idx.Times {
		fmt.Fprintf(out, "  timestamp %d -> offset %d\n", e.Timestamp, e.Offset)
	}
	return nil
}
