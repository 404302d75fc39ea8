package volume

import (
	"path"
	"strings"
	"testing"

	"tug.dev/tug/pkg/inputerr"
)

// FuzzValidateMountPath: nothing panics, a refusal is an input error, and
// an accepted path is what the runtime mounts at (its cleaned form is
// accepted too, and is not over /proc, /sys or /dev). hack/fuzz.sh runs it.
func FuzzValidateMountPath(f *testing.F) {
	for _, s := range []string{"/data", "/data/", "/srv/my files", "/.", "/./proc", "//sys", "/dev/.", "/a/../b", "/procdata", "/c:d", "data", "", "/a\nb", "/data//x/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if err := ValidateMountPath(p); err != nil {
			if !inputerr.Is(err) {
				t.Fatalf("a refusal that is not an input error: %v", err)
			}
			return
		}
		c := cleanMountPath(p)
		if c != path.Clean(p) || c == "/" {
			t.Fatalf("accepted %q, which mounts at %q", p, path.Clean(p))
		}
		for _, r := range reservedMounts {
			if c == r || strings.HasPrefix(c, r+"/") {
				t.Fatalf("accepted %q, over %s", p, r)
			}
		}
		if err := ValidateMountPath(c); err != nil {
			t.Fatalf("the clean form %q of accepted %q: %v", c, p, err)
		}
	})
}
