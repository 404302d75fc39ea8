package manifest

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// yamlKeys are the keys a doc type writes.
func yamlKeys(v any) []string {
	var keys []string
	t := reflect.TypeOf(v)
	for i := range t.NumField() {
		keys = append(keys, strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0])
	}
	slices.Sort(keys)
	return keys
}

// The JSON Schema for editors names exactly the keys tug reads and writes.
func TestSchemaMatchesTheFile(t *testing.T) {
	b, err := os.ReadFile("../../docs/manifest.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Defs       map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	names := func(m map[string]json.RawMessage) []string {
		var k []string
		for n := range m {
			k = append(k, n)
		}
		slices.Sort(k)
		return k
	}
	var hc struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(s.Defs["process"].Properties["healthcheck"], &hc)
	for _, c := range []struct {
		what       string
		got, wantK []string
	}{
		{"top level", names(s.Properties), yamlKeys(fileDoc{})},
		{"process", names(s.Defs["process"].Properties), yamlKeys(processDoc{})},
		{"healthcheck", names(hc.Properties), yamlKeys(hcDoc{})},
		{"limits", names(s.Defs["limits"].Properties), yamlKeys(limitsDoc{})},
		{"settings", names(s.Defs["settings"].Properties), yamlKeys(settingsDoc{})},
		{"job", names(s.Defs["job"].Properties), yamlKeys(jobDoc{})},
		{"service", names(s.Defs["service"].Properties), yamlKeys(serviceDoc{})},
	} {
		if !slices.Equal(c.got, c.wantK) {
			t.Errorf("%s: the schema has %v, tug.yaml %v", c.what, c.got, c.wantK)
		}
	}
}
