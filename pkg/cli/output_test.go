package cli

import (
	"errors"
	"testing"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/inputerr"
)

type sample struct {
	Name  string   `json:"name"`
	Units []string `json:"units"`
}

func parseOutputFlags(t *testing.T, args ...string) (OutputOptions, error) {
	t.Helper()
	var o OutputOptions
	cmd := &cobra.Command{Use: "x"}
	AddOutputFlags(cmd, &o)
	cmd.SetFlagErrorFunc(FlagErrorFunc)
	err := cmd.ParseFlags(args)
	if err != nil {
		err = cmd.FlagErrorFunc()(cmd, err)
	}
	return o, err
}

func TestOutputFlagDefaultsToTable(t *testing.T) {
	o, err := parseOutputFlags(t)
	if err != nil || o.Format != OutputTable || o.NoHeaders {
		t.Errorf("got %+v, %v; want table format without error", o, err)
	}
}

func TestOutputFlagAcceptsKnownFormats(t *testing.T) {
	for _, f := range []string{"table", "json", "yaml"} {
		o, err := parseOutputFlags(t, "-o", f, "--no-headers")
		if err != nil || string(o.Format) != f || !o.NoHeaders {
			t.Errorf("-o %s: got %+v, %v", f, o, err)
		}
	}
}

func TestOutputFlagRejectsUnknownFormatAsUsageError(t *testing.T) {
	_, err := parseOutputFlags(t, "-o", "xml")
	if !inputerr.Is(err) {
		t.Fatalf("got %v, want a usage error", err)
	}
	if want := `invalid argument "xml" for "-o, --output" flag: must be one of table, json, yaml, jsonpath=TEMPLATE, go-template=TEMPLATE`; err.Error() != want {
		t.Errorf("got %q, want %q", err.Error(), want)
	}
}

func TestPrintJSONAndYAML(t *testing.T) {
	data := sample{Name: "web", Units: []string{"web-1", "web-2"}}
	cases := map[OutputFormat]string{
		OutputJSON: "{\n  \"name\": \"web\",\n  \"units\": [\n    \"web-1\",\n    \"web-2\"\n  ]\n}\n",
		OutputYAML: "name: web\nunits:\n- web-1\n- web-2\n",
	}
	for format, want := range cases {
		ios, _, out, _ := TestIOStreams()
		o := OutputOptions{Format: format}
		err := o.Print(ios, data, func() error { return errors.New("human form must not be used") })
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if out.String() != want {
			t.Errorf("%s: got %q, want %q", format, out.String(), want)
		}
	}
}

func TestPrintTableCallsHumanForm(t *testing.T) {
	ios, _, _, _ := TestIOStreams()
	called := false
	o := OutputOptions{Format: OutputTable}
	if err := o.Print(ios, sample{}, func() error { called = true; return nil }); err != nil {
		t.Fatal(err)
	}
	if !called {
		t.Error("table format did not call the human form")
	}
}
