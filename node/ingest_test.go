package node

import (
	"strings"
	"testing"

	"github.com/floe-io/floe/ingest"
)

// The per-store defaults of the produce path: the PUT budget on S3 unless
// its PUTs cost nothing, the early-roll wait on the local directory, and
// uploads ahead only where PUTs are free on S3.
func TestIngestOptions(t *testing.T) {
	for _, tc := range []struct {
		name          string
		budget        string
		onS3, inline  bool
		set           ingest.Options
		rate, perGiB  float64
		ahead, upload int
		wait          bool // EarlyRollWaitLocal
		inlineMax     int
		err           string
	}{
		{name: "local directory", inline: true, rate: ingest.PutRateLocal, upload: 0, wait: true, inlineMax: ingest.InlineLocal},
		{name: "local directory shared", rate: ingest.PutRateLocal, wait: true},
		{name: "s3", onS3: true, rate: ingest.PutRateS3, perGiB: ingest.PutsPerGiBS3, upload: ingest.MaxUploadsS3},
		{name: "s3 budget named", budget: PutBudgetS3, onS3: true, rate: ingest.PutRateS3, perGiB: ingest.PutsPerGiBS3, upload: ingest.MaxUploadsS3},
		{name: "s3 free", budget: PutBudgetNone, onS3: true, rate: ingest.PutRateLocal, ahead: ingest.UploadAheadFree, upload: ingest.MaxUploadsS3},
		{name: "s3 free, set", budget: PutBudgetNone, onS3: true,
			set:  ingest.Options{MaxPutRate: 50, MaxPutsPerGiB: 100, UploadAheadBytes: 1 << 20, MaxUploads: 4},
			rate: 50, perGiB: 100, ahead: 1 << 20, upload: 4},
		{name: "s3 free, never ahead", budget: PutBudgetNone, onS3: true, set: ingest.Options{UploadAheadBytes: -1},
			rate: ingest.PutRateLocal, upload: ingest.MaxUploadsS3},
		{name: "s3, no per-GiB budget", onS3: true, set: ingest.Options{MaxPutsPerGiB: -1}, rate: ingest.PutRateS3, upload: ingest.MaxUploadsS3},
		{name: "s3, ahead set", onS3: true, set: ingest.Options{UploadAheadBytes: 1 << 20},
			rate: ingest.PutRateS3, perGiB: ingest.PutsPerGiBS3, ahead: 1 << 20, upload: ingest.MaxUploadsS3},
		{name: "budget on the local directory", budget: PutBudgetNone, err: "only for an S3 store"},
		{name: "unknown budget", budget: "cheap", onS3: true, err: `"cheap"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ingestOptions(Config{PutBudget: tc.budget, Ingest: tc.set}, tc.onS3, tc.inline)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			wait := got.EarlyRollWait == ingest.EarlyRollWaitLocal
			if got.MaxPutRate != tc.rate || got.MaxPutsPerGiB != tc.perGiB || got.UploadAheadBytes != tc.ahead ||
				got.MaxUploads != tc.upload || wait != tc.wait || got.InlineMax != tc.inlineMax {
				t.Fatalf("rate %g, per GiB %g, ahead %d, uploads %d, early-roll wait %s, inline %d; want %g, %g, %d, %d, local wait %v, %d",
					got.MaxPutRate, got.MaxPutsPerGiB, got.UploadAheadBytes, got.MaxUploads, got.EarlyRollWait, got.InlineMax,
					tc.rate, tc.perGiB, tc.ahead, tc.upload, tc.wait, tc.inlineMax)
			}
			if err := got.Validate(); err != nil {
				t.Fatalf("defaults do not validate: %v", err)
			}
		})
	}
}
