package move

import (
	"strings"
	"testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/inputerr"
)

// An app running a canary (or a kept blue-green release) is refused before
// anything is copied, with the way out: a move moves one release.
func TestMoveRefusesAnAppWithACanary(t *testing.T) {
	a := &app.App{Name: "shop", Release: 3, Canary: &app.Canary{Release: 4, Strategy: "canary", Weight: 25}}
	err := movableSource(a, Options{To: "west"})
	if err == nil || !inputerr.Is(err) || !strings.Contains(err.Error(), "tug release promote shop") {
		t.Fatalf("movableSource = %v", err)
	}
	a.Canary = nil
	if err := movableSource(a, Options{To: "west"}); err != nil {
		t.Errorf("without a canary: %v", err)
	}
}
