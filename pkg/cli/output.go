package cli

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// OutputFormat is the value of -o.
type OutputFormat string

const (
	OutputTable OutputFormat = "table"
	OutputJSON  OutputFormat = "json"
	OutputYAML  OutputFormat = "yaml"
)

var outputFormats = []OutputFormat{OutputTable, OutputJSON, OutputYAML}

// OutputOptions are the flags every read command takes.
type OutputOptions struct {
	Format    OutputFormat
	NoHeaders bool
}

// AddOutputFlags registers -o/--output and --no-headers on a command that
// prints tables.
func AddOutputFlags(cmd *cobra.Command, o *OutputOptions) {
	AddFormatFlag(cmd, &o.Format)
	cmd.Flags().BoolVar(&o.NoHeaders, "no-headers", false, "Omit the header row of tables")
}

// AddFormatFlag registers only -o/--output, for commands whose human form
// is not a table. A value other than table, json or yaml is rejected while
// flags are parsed, which makes it a usage error (exit 2) before the command
// runs.
func AddFormatFlag(cmd *cobra.Command, format *OutputFormat) {
	*format = OutputTable
	cmd.Flags().VarP((*formatValue)(format), "output", "o", "Output format: table, json or yaml")
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return []cobra.Completion{"table", "json", "yaml"}, cobra.ShellCompDirectiveNoFileComp
	})
}

// formatValue is a pflag.Value that accepts only the known formats.
type formatValue OutputFormat

func (v *formatValue) String() string { return string(*v) }
func (v *formatValue) Type() string   { return "format" }
func (v *formatValue) Set(s string) error {
	for _, f := range outputFormats {
		if OutputFormat(s) == f {
			*v = formatValue(f)
			return nil
		}
	}
	return fmt.Errorf("must be one of table, json, yaml")
}

// Print writes data as JSON or YAML when asked to; otherwise it calls human
// to write the human form (usually a Table). data should be a typed result
// struct whose JSON shape is documented in docs/output.md.
func (o OutputOptions) Print(ios *IOStreams, data any, human func() error) error {
	switch o.Format {
	case OutputJSON:
		return WriteJSON(ios, data)
	case OutputYAML:
		return WriteYAML(ios, data)
	default:
		return human()
	}
}

// WriteJSON writes v as indented JSON with a trailing newline.
func WriteJSON(ios *IOStreams, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding output as json: %w", err)
	}
	b = append(b, '\n')
	_, err = ios.Out.Write(b)
	return err
}

// WriteYAML writes v as YAML. It goes through the JSON encoding, so field
// names and omissions are the same as with -o json.
func WriteYAML(ios *IOStreams, v any) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding output as yaml: %w", err)
	}
	_, err = ios.Out.Write(b)
	return err
}

// cleanCell keeps one cell on one line and out of the way of the separators.
func cleanCell(s string) string {
	s = strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(s)
	// Keep the colour codes a Palette adds (ESC [ digits m): they only
	// colour, and tables are the place tug colours statuses.
	var b strings.Builder
	for s != "" {
		loc := sgr.FindStringIndex(s)
		if loc == nil {
			b.WriteString(Sanitize(s))
			break
		}
		b.WriteString(Sanitize(s[:loc[0]]))
		b.WriteString(s[loc[0]:loc[1]])
		s = s[loc[1]:]
	}
	return b.String()
}

var sgr = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// Sanitize makes text that came from the cluster (server messages, events,
// release messages another user stored) safe to print on a terminal: every
// control character but tab and newline is shown in caret or \u notation
// instead of being sent, so no escape sequence can move the cursor, retitle
// the window or hide what follows. Like kubectl's EscapeTerminal.
func Sanitize(s string) string {
	clean := true
	for _, r := range s {
		if isControl(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case !isControl(r):
			b.WriteRune(r)
		case r < 0x20:
			b.WriteByte('^')
			b.WriteByte(byte(r) + '@')
		case r == 0x7f:
			b.WriteString("^?")
		default:
			fmt.Fprintf(&b, "\\u%04x", r)
		}
	}
	return b.String()
}

func isControl(r rune) bool {
	return (r < 0x20 && r != '\t' && r != '\n') || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == utf8.RuneError
}
