package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"text/template"

	"k8s.io/client-go/util/jsonpath"
)

// The template formats, as kubectl spells them. The -file forms are read
// when the flag is parsed and kept as the inline form.
const (
	jsonpathPrefix   = "jsonpath="
	goTemplatePrefix = "go-template="
)

// ParseFormat checks an -o value other than name: table, json, yaml,
// jsonpath=TEMPLATE, jsonpath-file=FILE, go-template=TEMPLATE or
// go-template-file=FILE. A template must parse.
func ParseFormat(s string) (OutputFormat, error) {
	switch OutputFormat(s) {
	case OutputTable, OutputJSON, OutputYAML:
		return OutputFormat(s), nil
	}
	kind, text, ok := strings.Cut(s, "=")
	if !ok {
		return "", fmt.Errorf("must be one of table, json, yaml, jsonpath=TEMPLATE, go-template=TEMPLATE")
	}
	switch kind {
	case "jsonpath-file", "go-template-file":
		b, err := os.ReadFile(text)
		if err != nil {
			return "", fmt.Errorf("reading the template: %w", err)
		}
		kind, text = strings.TrimSuffix(kind, "-file"), string(b)
	case "jsonpath", "go-template":
	default:
		return "", fmt.Errorf("must be one of table, json, yaml, jsonpath=TEMPLATE, go-template=TEMPLATE")
	}
	f := OutputFormat(kind + "=" + text)
	if _, err := f.parseTemplate(); err != nil {
		return "", err
	}
	return f, nil
}

func (f OutputFormat) isTemplate() bool {
	return strings.HasPrefix(string(f), jsonpathPrefix) || strings.HasPrefix(string(f), goTemplatePrefix)
}

// executor is a parsed jsonpath or go-template.
type executor func(w *strings.Builder, data any) error

func (f OutputFormat) parseTemplate() (executor, error) {
	if text, ok := strings.CutPrefix(string(f), jsonpathPrefix); ok {
		j := jsonpath.New("output").AllowMissingKeys(true)
		if err := j.Parse(relaxedJSONPath(text)); err != nil {
			return nil, fmt.Errorf("invalid jsonpath template %q: %v", text, err)
		}
		return func(w *strings.Builder, data any) error { return j.Execute(w, data) }, nil
	}
	text := strings.TrimPrefix(string(f), goTemplatePrefix)
	t, err := template.New("output").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("invalid go-template %q: %v", text, err)
	}
	return func(w *strings.Builder, data any) error { return t.Execute(w, data) }, nil
}

// relaxedJSONPath accepts ".name" and "name" for "{.name}", as kubectl does.
// Most of tug's lists are JSON arrays, which client-go's jsonpath indexes as
// {[*].name}; {.[*].name}, which reads as naturally, would find nothing.
func relaxedJSONPath(text string) string {
	if !strings.Contains(text, "{") {
		if !strings.HasPrefix(text, ".") && !strings.HasPrefix(text, "[") {
			text = "." + text
		}
		text = "{" + text + "}"
	}
	return rootIndex.ReplaceAllString(text, "${1}[")
}

// rootIndex is a path that starts by indexing the root: {.[0]}, {range .[*]}.
var rootIndex = regexp.MustCompile(`([{\s])\.\[`)

// generic turns a typed result into the JSON shape users see with -o json,
// which is what templates and -o name address.
func generic(data any) (any, error) {
	b, err := json.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("encoding output: %w", err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("encoding output: %w", err)
	}
	return v, nil
}

func writeTemplate(ios *IOStreams, f OutputFormat, data any) error {
	run, err := f.parseTemplate()
	if err != nil {
		return err
	}
	v, err := generic(data)
	if err != nil {
		return err
	}
	var b strings.Builder
	if err := run(&b, v); err != nil {
		return fmt.Errorf("executing the -o template: %v", err)
	}
	// Like kubectl, no newline is added: the template decides.
	_, err = ios.Out.Write([]byte(b.String()))
	return err
}

// writeNames prints KIND/NAME for each item of a list: an array, an object
// holding one (node list's nodes, pool list's pools), or an object keyed by
// name (app limit list). An item's name is its name, host or version (v3).
func writeNames(ios *IOStreams, kind string, data any) error {
	v, err := generic(data)
	if err != nil {
		return err
	}
	var names []string
	for _, item := range listItems(v) {
		n := itemName(item)
		if n == "" {
			return fmt.Errorf("-o name: an item has no name; use -o json")
		}
		names = append(names, n)
	}
	seen := map[string]bool{}
	var b strings.Builder
	for _, n := range names {
		if seen[n] {
			continue // node containers list one entry per pool version
		}
		seen[n] = true
		fmt.Fprintf(&b, "%s/%s\n", kind, n)
	}
	_, err = ios.Out.Write([]byte(b.String()))
	return err
}

func listItems(v any) []any {
	switch v := v.(type) {
	case []any:
		return v
	case map[string]any:
		for _, key := range []string{"items", "nodes", "pools"} {
			if items, ok := v[key].([]any); ok {
				return items
			}
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		items := make([]any, len(keys))
		for i, k := range keys {
			items[i] = k
		}
		return items
	}
	return nil
}

func itemName(item any) string {
	switch item := item.(type) {
	case string:
		return item
	case map[string]any:
		for _, key := range []string{"name", "host"} {
			if s, ok := item[key].(string); ok && s != "" {
				return s
			}
		}
		if n, ok := item["version"].(float64); ok {
			return fmt.Sprintf("v%d", int64(n))
		}
	}
	return ""
}
