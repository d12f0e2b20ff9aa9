package record

import (
	"bufio"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected outputs in testdata/*.txt")

// TestDataDriven runs the cases in testdata/*.txt: each is a command line, input lines,
// "----", and the expected output up to a blank line. Comments (#) and blank lines
// between cases are kept by -rewrite.
func TestDataDriven(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var (
				out      strings.Builder
				sc       = bufio.NewScanner(strings.NewReader(string(data)))
				cmd      string
				cmdLine  int
				input    []string
				expected []string
				state    = 0 // 0 between cases, 1 input, 2 expected output
				line     = 0
			)
			finish := func() {
				got := runCommand(cmd, input)
				want := strings.Join(expected, "\n")
				if got != want {
					if !*rewrite {
						t.Errorf("%s:%d: %s\n got:\n%s\nwant:\n%s", file, cmdLine, cmd, got, want)
					}
				}
				out.WriteString(got + "\n")
				state, input, expected = 0, nil, nil
			}
			for sc.Scan() {
				line++
				text := sc.Text()
				switch state {
				case 0:
					out.WriteString(text + "\n")
					if trimmed := strings.TrimSpace(text); trimmed != "" && !strings.HasPrefix(trimmed, "#") {
						cmd, cmdLine, state = trimmed, line, 1
					}
				case 1:
					out.WriteString(text + "\n")
					if text == "----" {
						state = 2
					} else {
						input = append(input, text)
					}
				case 2:
					if text == "" {
						finish()
						out.WriteString("\n")
					} else {
						expected = append(expected, text)
					}
				}
			}
			if state == 2 {
				finish()
			} else if state == 1 {
				t.Fatalf("%s:%d: case without ----", file, cmdLine)
			}
			if *rewrite {
				if err := os.WriteFile(file, []byte(out.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func runCommand(cmd string, input []string) string {
	switch cmd {
	case "decode":
		var hx strings.Builder
		for _, l := range input {
			l, _, _ = strings.Cut(l, "#")
			hx.WriteString(strings.Join(strings.Fields(l), ""))
		}
		b, err := hex.DecodeString(hx.String())
		if err != nil {
			return "bad hex: " + err.Error()
		}
		return decodeText(b)
	}
	return "unknown command " + cmd
}

// decodeText validates b and renders its header and records.
func decodeText(b []byte) string {
	h, err := Validate(b)
	if err != nil {
		return "validate: " + err.Error()
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "header: base-offset=%d length=%d leader-epoch=%d magic=%d crc=%#08x attrs=%#04x codec=%s\n",
		h.BaseOffset, h.BatchLength, h.PartitionLeaderEpoch, h.Magic, h.CRC, h.Attributes, h.Codec())
	fmt.Fprintf(&sb, "header: last-offset-delta=%d base-ts=%d max-ts=%d producer=%d/%d/%d records=%d",
		h.LastOffsetDelta, h.BaseTimestamp, h.MaxTimestamp, h.ProducerID, h.ProducerEpoch, h.BaseSequence, h.NumRecords)
	err = Records(b, func(r *Record) error {
		sb.WriteString("\nrecord: " + fmtRecord(r))
		return nil
	})
	if err != nil {
		sb.WriteString("\nrecords: " + err.Error())
	}
	return sb.String()
}
