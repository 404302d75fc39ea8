package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/clustersettings"
)

// bufferIO is IOStreams writing into buffers (not terminals).
func bufferIO() (*cli.IOStreams, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	return &cli.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, &out, &errOut
}

// show prints the cluster's values then each pool's, in key order; -o
// json is the stored settings; none at all, or none readable, is said on
// stderr with what to do, and stdout stays empty for scripts.
func TestClusterSettingsShow(t *testing.T) {
	stored := &clustersettings.Stored{Found: true,
		Cluster: clustersettings.Settings{clustersettings.AppsDomain: "apps.example.com", clustersettings.Gateway: "infra/router"},
		Pools:   map[string]clustersettings.Settings{"gpu": {clustersettings.AppsDomain: "gpu.example.com"}, "batch": {clustersettings.Router: "other"}}}
	read := func(s *clustersettings.Stored, err error) func(context.Context) (*clustersettings.Stored, error) {
		return func(context.Context) (*clustersettings.Stored, error) { return s, err }
	}
	ios, out, _ := bufferIO()
	if err := runClusterSettingsShow(context.Background(), &clusterSettingsShowOptions{IO: ios, Read: read(stored, nil)}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{"gateway", "appsDomain", "pool batch", "pool gpu"}
	if len(lines) != 5 {
		t.Fatalf("table:\n%s", out)
	}
	for i, w := range want {
		if !strings.Contains(lines[i+1], w) {
			t.Errorf("row %d %q, want %s", i+1, lines[i+1], w)
		}
	}

	ios, out, _ = bufferIO()
	if err := runClusterSettingsShow(context.Background(), &clusterSettingsShowOptions{IO: ios, Read: read(stored, nil), Output: cli.OutputOptions{Format: cli.OutputJSON}}); err != nil {
		t.Fatal(err)
	}
	var got clustersettings.Stored
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || got.Pools["gpu"][clustersettings.AppsDomain] != "gpu.example.com" || !got.Found {
		t.Errorf("json %s: %v", out, err)
	}

	for _, s := range []*clustersettings.Stored{{Cluster: clustersettings.Settings{}}, {Cluster: clustersettings.Settings{}, Unreadable: true}} {
		ios, out, errOut := bufferIO()
		if err := runClusterSettingsShow(context.Background(), &clusterSettingsShowOptions{IO: ios, Read: read(s, nil)}); err != nil {
			t.Fatal(err)
		}
		if out.Len() != 0 || !strings.Contains(errOut.String(), "admin") {
			t.Errorf("unreadable=%v: stdout %q, stderr %q", s.Unreadable, out, errOut)
		}
	}
	ios, _, _ = bufferIO()
	if err := runClusterSettingsShow(context.Background(), &clusterSettingsShowOptions{IO: ios, Read: read(nil, errors.New("boom"))}); err == nil {
		t.Error("a failed read: no error")
	}
}

// set and unset say, per key and scope, what the setting is now.
func TestClusterSettingsSet(t *testing.T) {
	var asked clustersettings.Change
	write := func(_ context.Context, c clustersettings.Change) (*clustersettings.Stored, error) {
		asked = c
		s := &clustersettings.Stored{Found: true, Cluster: clustersettings.Settings{}}
		c.Apply(s)
		return s, nil
	}
	ios, out, errOut := bufferIO()
	o := &clusterSettingsSetOptions{IO: ios, Write: write, Change: clustersettings.Change{Pool: "gpu",
		Set: map[string]string{clustersettings.Router: "traefik"}, Unset: []string{clustersettings.AppsDomain}}}
	if err := runClusterSettingsSet(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if asked.Pool != "gpu" || out.String() != "pool gpu: appsDomain unset\npool gpu: router=traefik\n" || !strings.Contains(errOut.String(), "next deploy") {
		t.Errorf("stdout %q stderr %q", out, errOut)
	}
	o.Write = func(context.Context, clustersettings.Change) (*clustersettings.Stored, error) {
		return nil, errors.New("forbidden")
	}
	ios, out, _ = bufferIO()
	o.IO = ios
	if err := runClusterSettingsSet(context.Background(), o); err == nil || out.Len() != 0 {
		t.Errorf("a failed write: %v, stdout %q", err, out)
	}
}
