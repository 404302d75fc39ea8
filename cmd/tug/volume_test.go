package main

import (
	"context"
	"strings"
	"testing"

	"tug.dev/tug/pkg/cli"
)

func TestNewVolumeCmds(t *testing.T) {
	c, err := parseCmd(t, newVolumeCreateCmd, "uploads", "--size", "10Gi", "--storage-class", "nfs", "--access-mode", "RWX")
	if err != nil || c == nil || c.Name != "uploads" || c.Size != "10Gi" || c.StorageClass != "nfs" || c.AccessMode != "RWX" {
		t.Fatalf("create: error %v, options %+v", err, c)
	}
	for _, bad := range []struct {
		argv []string
		want string
	}{{[]string{"uploads"}, "--size"}, {[]string{"uploads", "--size", "lots"}, "lots"}, {[]string{"uploads", "--size", "1Gi", "--access-mode", "RWM"}, "RWM"}} {
		c, err := parseCmd(t, newVolumeCreateCmd, bad.argv...)
		wantParseError(t, c, err, bad.want)
	}
	b, err := parseCmd(t, newVolumeBindCmd, "shop", "uploads", "--mount-path", "/data", "-p", "worker", "--read-only")
	if err != nil || b == nil || b.App != "shop" || b.Binding.Volume != "uploads" || b.Binding.MountPath != "/data" || b.Binding.Process != "worker" || !b.Binding.ReadOnly {
		t.Fatalf("bind: error %v, options %+v", err, b)
	}
	b, err = parseCmd(t, newVolumeBindCmd, "shop", "uploads", "--mount-path", "data")
	wantParseError(t, b, err, "data")
	u, err := parseCmd(t, newVolumeUnbindCmd, "shop", "uploads", "--no-wait")
	if err != nil || u == nil || u.App != "shop" || u.Volume != "uploads" || !u.Rollout.NoWait {
		t.Fatalf("unbind: error %v, options %+v", err, u)
	}
	u, err = parseCmd(t, newVolumeUnbindCmd, "shop", "Uploads")
	wantParseError(t, u, err, "Uploads")
	l, err := parseCmd(t, newVolumeListCmd, "-o", "json")
	if err != nil || l == nil || l.Output.Format != cli.OutputJSON {
		t.Fatalf("list: error %v, options %+v", err, l)
	}
	r, err := parseCmd(t, newVolumeRemoveCmd, "uploads", "-y")
	if err != nil || r == nil || r.Name != "uploads" || !r.Yes {
		t.Fatalf("remove: error %v, options %+v", err, r)
	}
	r, err = parseCmd(t, newVolumeRemoveCmd, "up loads")
	wantParseError(t, r, err, "up loads")
}

// create makes the volume, list shows it, remove needs --yes off a
// terminal and then deletes it.
func TestRunVolumeCreateListRemove(t *testing.T) {
	p := newPrinterFixture(t)
	ctx := context.Background()
	ios, _, out, errOut := cli.TestIOStreams()
	c := &volumeCreateOptions{IO: ios, Store: fixtureStore(p), CommandName: "tug", Output: cli.OutputOptions{Format: cli.OutputTable}}
	c.Name, c.Size, c.AccessMode = "uploads", "1Gi", "RWO"
	if err := runVolumeCreate(ctx, c); err != nil || !strings.Contains(out.String(), `volume "uploads" created (1Gi, RWO); mount it with 'tug volume bind APP uploads --mount-path /data'`) {
		t.Fatalf("create: %v, stdout %q", err, out)
	}
	out.Reset()
	l := &volumeListOptions{IO: ios, Store: fixtureStore(p), CommandName: "tug", Output: cli.OutputOptions{Format: cli.OutputTable}}
	if err := runVolumeList(ctx, l); err != nil || !strings.Contains(out.String(), "uploads\t1Gi\tRWO\t-\t") {
		t.Errorf("list: %v\n%s", err, out)
	}
	r := &volumeRemoveOptions{IO: ios, Store: fixtureStore(p), Prompter: func() cli.Prompter { return nil }, Name: "uploads"}
	if err := runVolumeRemove(ctx, r); err == nil || !strings.Contains(err.Error(), "pass --yes") {
		t.Errorf("remove without --yes: %v", err)
	}
	r.Yes = true
	if err := runVolumeRemove(ctx, r); err != nil || !strings.Contains(errOut.String(), `volume "uploads" removed`) {
		t.Errorf("remove: %v, stderr %q", err, errOut)
	}
	errOut.Reset()
	if err := runVolumeList(ctx, l); err != nil || !strings.Contains(errOut.String(), `no volumes in namespace "dev"`) {
		t.Errorf("list after remove: %v, stderr %q", err, errOut)
	}
}
