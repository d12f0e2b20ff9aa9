package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// table prints aligned columns, the human output of every listing.
type table struct {
	tw *tabwriter.Writer
}

// newTable starts a table on w with the given column headers (none for a
// headerless key/value table).
func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	if len(header) > 0 {
		t.row(strAny(header)...)
	}
	return t
}

func strAny(s []string) []any {
	a := make([]any, len(s))
	for i, v := range s {
		a[i] = v
	}
	return a
}

// row adds a row; each cell is printed with %v, tabs and newlines in it
// replaced so they cannot break the alignment.
func (t *table) row(cells ...any) {
	s := make([]string, len(cells))
	for i, c := range cells {
		s[i] = strings.NewReplacer("\t", " ", "\n", " ").Replace(fmt.Sprint(c))
	}
	fmt.Fprintln(t.tw, strings.Join(s, "\t"))
}

func (t *table) flush() { t.tw.Flush() }

// printJSON prints v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// report prints v, as JSON with --json and else with table, and returns
// errs joined: a command prints every item, those that failed too, and then
// fails if any did.
func (c *cli) report(v any, table func(), errs []error) error {
	if c.g.json {
		if err := printJSON(c.stdout, v); err != nil {
			return err
		}
	} else {
		table()
	}
	return errors.Join(errs...)
}

// itemErrs collects the Kafka errors of the items of an answer (topics,
// groups, users, partitions), each prefixed with the item it is about, for
// report.
type itemErrs []error

// add records err, if it is not nil, as "item: err" (item formatted with
// args, as "topic %s") and returns errString(err) for the item's output.
func (e *itemErrs) add(err error, item string, args ...any) string {
	if err == nil {
		return ""
	}
	*e = append(*e, fmt.Errorf("%s: %w", fmt.Sprintf(item, args...), err))
	return err.Error()
}

// status is an item's STATUS column: verb ("created"), or "failed" with an
// error.
func status(verb, errText string) string {
	if errText != "" {
		return "failed"
	}
	return verb
}

// errString is err's text, "" for nil: the ERROR column and "error" field.
func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// joinInts prints a list of numbers as "1,2,3".
func joinInts[T ~int32 | ~int64 | ~int](v []T) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ",")
}
