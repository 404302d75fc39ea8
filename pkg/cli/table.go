package cli

import (
	"bytes"
	"io"
	"regexp"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"tug.dev/tug/pkg/text"
)

// Table is rows of text for people. On a terminal it is drawn kubectl-style:
// upper-case headers, left aligned, columns three spaces apart, no borders,
// and image digests shortened to 12 hex digits as docker shows image IDs
// (a whole one is 71 characters: a row with one wraps on a 100-column
// terminal). Piped, it is plain tab-separated values without colour, with
// whole digests, for cut and awk.
type Table struct {
	header      []string
	rows        [][]string
	fullDigests bool
}

// FullDigests keeps whole digests on a terminal too (-o wide).
func (t *Table) FullDigests() *Table {
	t.fullDigests = true
	return t
}

// digest is a sha256 digest, as in an image reference (repo@sha256:...).
var digest = regexp.MustCompile(`\b(sha256:[0-9a-f]{12})[0-9a-f]{52}\b`)

// ShortDigests shortens every sha256 digest in s to its first 12 hex
// digits, for a terminal: "shop@sha256:3f2c1e9a0b4d". Scripts get whole
// ones (-o json, or piped).
func ShortDigests(s string) string {
	return digest.ReplaceAllString(s, "$1")
}

// NewTable starts a table with the given column names.
func NewTable(header ...string) *Table {
	h := make([]string, len(header))
	for i, c := range header {
		h[i] = strings.ToUpper(c)
	}
	return &Table{header: h}
}

// AddRow appends a row; missing cells are blank and extra ones are dropped.
func (t *Table) AddRow(cells ...string) {
	row := make([]string, len(t.header))
	for i := range row {
		if i < len(cells) {
			row[i] = cleanCell(cells[i])
		}
	}
	t.rows = append(t.rows, row)
}

// Len is the number of rows.
func (t *Table) Len() int { return len(t.rows) }

// Render writes the table to ios.Out. Where colour is off, the colour
// codes a cell kept (tug's, or the cluster's) are dropped.
func (t *Table) Render(ios *IOStreams, noHeaders bool) error {
	if !ios.ColorEnabled() {
		t = t.withoutColor()
	}
	if !ios.IsStdoutTTY() {
		return t.renderTSV(ios.Out, noHeaders)
	}
	return t.renderAligned(ios.Out, noHeaders)
}

func (t *Table) withoutColor() *Table {
	plain := &Table{header: t.header, rows: make([][]string, len(t.rows)), fullDigests: t.fullDigests}
	for i, r := range t.rows {
		plain.rows[i] = make([]string, len(r))
		for j, c := range r {
			plain.rows[i][j] = text.SanitizeColor(c, false)
		}
	}
	return plain
}

func (t *Table) renderTSV(w io.Writer, noHeaders bool) error {
	var b strings.Builder
	if !noHeaders {
		b.WriteString(strings.Join(t.header, "\t"))
		b.WriteByte('\n')
	}
	for _, r := range t.rows {
		b.WriteString(strings.Join(r, "\t"))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

const columnGap = "   "

func (t *Table) renderAligned(w io.Writer, noHeaders bool) error {
	if noHeaders && len(t.rows) == 0 {
		return nil
	}
	var buf bytes.Buffer
	tbl := tablewriter.NewTable(&buf,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders:  tw.BorderNone,
			Symbols:  tw.NewSymbols(tw.StyleNone),
			Settings: tw.Settings{Lines: tw.LinesNone, Separators: tw.SeparatorsNone},
		})),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		// The default padding puts a space on both sides of every cell; we
		// want kubectl's look: flush left, a fixed gap between columns.
		tablewriter.WithPadding(tw.Padding{Right: columnGap, Overwrite: true}),
		// Headers are upper-cased by NewTable; tablewriter's own formatting
		// would also rewrite "_" and "." in them.
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithTrimSpace(tw.Off),
	)
	if !noHeaders {
		tbl.Header(t.header)
	}
	for _, r := range t.rows {
		if !t.fullDigests {
			short := make([]string, len(r))
			for i, c := range r {
				short[i] = ShortDigests(c)
			}
			r = short
		}
		if err := tbl.Append(r); err != nil {
			return err
		}
	}
	if err := tbl.Render(); err != nil {
		return err
	}
	// Every cell, the last included, is padded to its column's width; strip
	// what that leaves at the end of each line.
	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	var out strings.Builder
	for _, l := range lines {
		out.WriteString(strings.TrimRight(l, " "))
		out.WriteByte('\n')
	}
	_, err := io.WriteString(w, out.String())
	return err
}
