package docgen

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

func TestConfigurationDoc(t *testing.T) {
	Check(t, "../../docs/configuration.md", "topic-configs", TopicConfigTable())
}

func TestFlagTable(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.Duration("ingest-linger", 250*time.Millisecond, "longest a batch | waits")
	fs.String("s3-bucket", "", "S3 bucket")
	want := "| flag | environment | default | what |\n|---|---|---|---|\n" +
		"| `--ingest-linger` | `FLOE_INGEST_LINGER` | `250ms` | longest a batch \\| waits |\n" +
		"| `--s3-bucket` | `FLOE_S3_BUCKET` | none | S3 bucket |\n"
	if got := FlagTable(fs); got != want {
		t.Errorf("FlagTable:\n%s\nwant:\n%s", got, want)
	}
}

func TestReplaceSection(t *testing.T) {
	begin, end := markers("x")
	doc := "intro\n" + begin + "old\n" + end + "outro\n"
	got, err := ReplaceSection(doc, "x", "new\n")
	if err != nil || got != "intro\n"+begin+"new\n"+end+"outro\n" {
		t.Errorf("ReplaceSection: %q, %v", got, err)
	}
	if _, err := ReplaceSection(doc, "y", ""); err == nil || !strings.Contains(err.Error(), "BEGIN y") {
		t.Errorf("a missing section: %v", err)
	}
}

// TestCheckFails checks that a stale section fails with the command that
// regenerates it.
func TestCheckFails(t *testing.T) {
	begin, end := markers("x")
	path := t.TempDir() + "/doc.md"
	if err := writeFile(path, begin+"stale\n"+end); err != nil {
		t.Fatal(err)
	}
	t.Setenv(UpdateEnv, "")
	ft := &fakeT{TB: t}
	Check(ft, path, "x", "fresh\n")
	if !strings.Contains(ft.msg, Command) {
		t.Errorf("a stale section gave %q, want the command %q", ft.msg, Command)
	}
	ft = &fakeT{TB: t}
	Check(ft, path, "x", "stale\n")
	if ft.msg != "" {
		t.Errorf("an up-to-date section failed: %s", ft.msg)
	}
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o644) }

// fakeT records Errorf instead of failing the test.
type fakeT struct {
	testing.TB
	msg string
}

func (f *fakeT) Helper() {}

func (f *fakeT) Errorf(format string, args ...any) { f.msg = fmt.Sprintf(format, args...) }
