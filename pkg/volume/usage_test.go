package volume

import (
	"testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/inputerr"
)

// Every check that needs no cluster fails with an input error (exit 2), so
// commands return it as it is.
func TestValidationErrorsAreInputErrors(t *testing.T) {
	for name, err := range map[string]error{
		"name":         ValidateName("Bad_Name"),
		"mount path":   ValidateMountPath("data"),
		"no size":      CreateOptions{Name: "v"}.Validate(),
		"bad size":     CreateOptions{Name: "v", Size: "lots"}.Validate(),
		"access mode":  CreateOptions{Name: "v", Size: "1Gi", AccessMode: "XYZ"}.Validate(),
		"storageclass": CreateOptions{Name: "v", Size: "1Gi", StorageClass: "Not Valid"}.Validate(),
		"bind app":     ValidateBind("Shop", app.VolumeBinding{Volume: "v", MountPath: "/data"}),
		"bind volume":  ValidateBind("shop", app.VolumeBinding{Volume: "V", MountPath: "/data"}),
		"bind path":    ValidateBind("shop", app.VolumeBinding{Volume: "v", MountPath: "/proc/x"}),
		"bind process": ValidateBind("shop", app.VolumeBinding{Volume: "v", MountPath: "/data", Process: "my-web"}),
	} {
		if !inputerr.Is(err) {
			t.Errorf("%s: %v is not an input error", name, err)
		}
	}
	if err := (CreateOptions{Name: "v", Size: "1Gi"}).Validate(); err != nil {
		t.Errorf("valid options: %v", err)
	}
	if err := ValidateBind("shop", app.VolumeBinding{Volume: "v", MountPath: "/data", Process: "web"}); err != nil {
		t.Errorf("valid binding: %v", err)
	}
	if err := ValidateName("uploads"); err != nil {
		t.Errorf("valid name: %v", err)
	}
}
