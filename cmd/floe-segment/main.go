// Command floe-segment prints a segment object (tiered/) read from a local
// file: its trailer, each batch, and both indexes.
//
//	go run ./cmd/floe-segment FILE
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/floe-io/floe/record"
	"github.com/floe-io/floe/tiered"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "floe-segment:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("floe-segment", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), "usage: floe-segment FILE") }
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("want one FILE")
	}
	obj, err := os.ReadFile(fs.Arg(0))
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
