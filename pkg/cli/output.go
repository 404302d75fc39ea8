package cli

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"tug.dev/tug/pkg/text"
)

// OutputFormat is the value of -o: table, json, yaml, name, or a template
// with its text ("jsonpath={.name}", "go-template={{.name}}").
type OutputFormat string

const (
	OutputTable OutputFormat = "table"
	OutputJSON  OutputFormat = "json"
	OutputYAML  OutputFormat = "yaml"
	// OutputName prints KIND/NAME per item of a list, as kubectl's -o name.
	OutputName OutputFormat = "name"
)

// OutputOptions are the flags every read command takes.
type OutputOptions struct {
	Format    OutputFormat
	NoHeaders bool
	// NameKind is the KIND of -o name's KIND/NAME lines. AddOutputFlags
	// fills it from the command (its group's name) when a list is asked
	// for -o name.
	NameKind string
}

// nameKindAnnotation on a list command overrides the KIND of -o name, which
// is otherwise its parent's name (app list -> app/shop).
const nameKindAnnotation = "tug.dev/name-kind"

// SetNameKind sets the KIND a list command's -o name prints.
func SetNameKind(cmd *cobra.Command, kind string) {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[nameKindAnnotation] = kind
}

// AddOutputFlags registers -o/--output and --no-headers on a command that
// prints tables. On a list command, -o also takes name.
func AddOutputFlags(cmd *cobra.Command, o *OutputOptions) {
	v := addFormatFlag(cmd, &o.Format)
	if cmd.Name() == "list" {
		v.kind = &o.NameKind
	}
	cmd.Flags().BoolVar(&o.NoHeaders, "no-headers", false, "Omit the header row of tables")
}

// AddFormatFlag registers only -o/--output, for commands whose human form
// is not a table. A value other than the formats below is rejected while
// flags are parsed, which makes it a usage error (exit 2) before the command
// runs; so is a template that does not parse.
func AddFormatFlag(cmd *cobra.Command, format *OutputFormat) {
	addFormatFlag(cmd, format)
}

func addFormatFlag(cmd *cobra.Command, format *OutputFormat) *formatValue {
	*format = OutputTable
	v := &formatValue{format: format, cmd: cmd}
	cmd.Flags().VarP(v, "output", "o", "Output format: table, json, yaml, jsonpath=TEMPLATE or go-template=TEMPLATE")
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return v.completions(), cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	})
	return v
}

// formatValue is the pflag.Value of -o.
type formatValue struct {
	format *OutputFormat
	cmd    *cobra.Command
	kind   *string // where -o name records its KIND; nil: not a list, no -o name
}

func (v *formatValue) String() string {
	if v.format == nil {
		return ""
	}
	return string(*v.format)
}
func (v *formatValue) Type() string { return "format" }
func (v *formatValue) Set(s string) error {
	if s == string(OutputName) && v.kind != nil {
		*v.format = OutputName
		if *v.kind == "" {
			*v.kind = NameKindOf(v.cmd)
		}
		return nil
	}
	f, err := ParseFormat(s)
	if err != nil {
		if v.kind != nil {
			return fmt.Errorf("must be one of table, json, yaml, name, jsonpath=TEMPLATE, go-template=TEMPLATE")
		}
		return err
	}
	*v.format = f
	return nil
}

func (v *formatValue) completions() []cobra.Completion {
	c := []cobra.Completion{"table", "json", "yaml"}
	if v.kind != nil {
		c = append(c, "name")
	}
	return append(c, "jsonpath=", "go-template=")
}

// NameKindOf is the KIND -o name prints for a list command: its annotation,
// else its group's name (unit list -> unit).
func NameKindOf(cmd *cobra.Command) string {
	if k := cmd.Annotations[nameKindAnnotation]; k != "" {
		return k
	}
	if cmd.HasParent() {
		return cmd.Parent().Name()
	}
	return cmd.Name()
}

// Print writes data as JSON, YAML, names or through a template when asked
// to; otherwise it calls human to write the human form (usually a Table).
// data should be a typed result struct whose JSON shape is documented in
// docs/output.md; templates and -o name see that same JSON shape.
func (o OutputOptions) Print(ios *IOStreams, data any, human func() error) error {
	switch {
	case o.Format == OutputJSON:
		return WriteJSON(ios, data)
	case o.Format == OutputYAML:
		return WriteYAML(ios, data)
	case o.Format == OutputName:
		return writeNames(ios, o.NameKind, data)
	case o.Format.isTemplate():
		return writeTemplate(ios, o.Format, data)
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

// cleanCell keeps one cell on one line and out of the way of the
// separators, and makes it safe for a terminal. It keeps SGR colour codes
// (a Palette's: tables are the place tug colours statuses); Render drops
// them where colour is off.
func cleanCell(s string) string {
	s = strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(s)
	return text.SanitizeColor(s, true)
}

// Sanitize makes text that came from the cluster (server messages, events,
// release messages another user stored) safe to print on a terminal; see
// text.Sanitize.
func Sanitize(s string) string { return text.Sanitize(s) }
