package main

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"

	"tug.dev/tug/pkg/cli/clitest"
	"tug.dev/tug/pkg/sourcedeploy"
)

// What a new user types on a first day (issue 40, item 12) gets a message
// that says what to do, held in golden files (go test -update).
func TestNewUserMessagesGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
	}{
		{"logs-tail-no-number", []string{"logs", "shop", "--tail"}},
		{"logs-tail-takes-app", []string{"logs", "--tail", "shop"}},
		{"promote-to", []string{"release", "promote", "shop", "--to", "x"}},
		{"env-list", []string{"env", "list", "shop"}},
		{"job-add-dry-run", []string{"job", "add", "shop", "report", "--schedule", "@daily", "--dry-run", "--", "echo", "hi"}},
		{"image-upper-case", []string{"app", "deploy", "shop", "--image", "UPPER/Case:1"}},
		{"heroku-create-flags", []string{"create", "shop2", "--pool", "x"}},
		{"heroku-create-global-flags", []string{"-n", "dev", "create", "shop2", "--pool", "x", "-m", "a new shop"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := execute(t, nil, c.args...)
			clitest.Golden(t, "newuser/"+c.name, []byte(fmt.Sprintf("exit %d\n--- stderr\n%s--- stdout\n%s", r.code, r.stderr, r.stdout)))
		})
	}
}

// --yes, which CI scripts pass to whatever they run, is accepted by
// commands that ask nothing (it was an unknown flag, exit 2).
func TestYesIsAcceptedWhereNothingAsks(t *testing.T) {
	p := shopFixture(t)
	for _, args := range [][]string{{"env", "get", "shop", "--yes"}, {"app", "info", "shop", "-y"}, {"release", "list", "shop", "--yes"}} {
		if r := p.run(t, false, args...); r.code != 0 || r.stdout == "" {
			t.Errorf("tug %v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
}

// Ctrl-C during a build from source says the build was cancelled and what
// that left (it printed only client-go's raw UnhandledError lines).
func TestBuildCancelledSaysSo(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stderr bytes.Buffer
	err := &sourcedeploy.CancelledError{App: "shop", Err: fmt.Errorf("streaming the source: %w", context.Canceled)}
	if code := exitCode(ctx, &stderr, nil, err); code != 130 {
		t.Errorf("exit %d, want 130", code)
	}
	clitest.Golden(t, "newuser/build-cancelled", stderr.Bytes())
	// client-go's unhandled errors are not printed
	saved := utilruntime.ErrorHandlers
	defer func() { utilruntime.ErrorHandlers = saved }()
	quietUnhandledErrors()
	var logged bytes.Buffer
	klog.LogToStderr(false)
	klog.SetOutput(&logged)
	defer klog.LogToStderr(true)
	utilruntime.HandleError(fmt.Errorf("stream cut"))
	klog.Flush()
	if logged.Len() != 0 {
		t.Errorf("an unhandled error was logged: %q", logged.String())
	}
}

// volume create on a cluster with no StorageClass says at create that the
// volume will stay Pending (it said "created", and the bind failed later).
func TestVolumeCreateWithoutStorageClassSaysSo(t *testing.T) {
	p := newPrinterFixture(t)
	r := p.run(t, false, "volume", "create", "data", "--size", "1Gi")
	clitest.Golden(t, "newuser/volume-create-no-storage-class", []byte(fmt.Sprintf("exit %d\n--- stderr\n%s--- stdout\n%s", r.code, r.stderr, r.stdout)))
}
