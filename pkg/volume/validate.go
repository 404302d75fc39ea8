package volume

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"tug.dev/tug/pkg/inputerr"
)

// MaxNameLen keeps every name derived from a volume valid: the pod volume
// "vol-<name>" is a DNS-1123 label (63), and so is the label value.
const MaxNameLen = 40

var nameRE = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)

// ValidateName checks a volume name; the error says what a valid one is. Its error is an input error.
func ValidateName(name string) error {
	return inputerr.Wrap(validateName(name))
}

func validateName(name string) error {
	switch {
	case name == "":
		return errors.New("volume name is empty")
	case len(name) > MaxNameLen:
		return fmt.Errorf("volume name %q is %d characters; the limit is %d", name, len(name), MaxNameLen)
	case !nameRE.MatchString(name):
		return fmt.Errorf("invalid volume name %q: use lower-case letters, digits and '-', starting with a letter and ending with a letter or digit", name)
	}
	return nil
}

// ParseSize parses --size as a Kubernetes quantity greater than zero.
func ParseSize(s string) (resource.Quantity, error) {
	if s == "" {
		return resource.Quantity{}, errors.New("--size is required: how much storage, e.g. 1Gi or 500Mi")
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return resource.Quantity{}, fmt.Errorf("invalid --size %q: not a quantity; use e.g. 1Gi, 500Mi or 10G", s)
	}
	if q.Sign() <= 0 {
		return resource.Quantity{}, fmt.Errorf("invalid --size %q: it must be more than zero", s)
	}
	return q, nil
}

// accessModes maps the short names people type to Kubernetes access modes.
var accessModes = map[string]corev1.PersistentVolumeAccessMode{
	"RWO":  corev1.ReadWriteOnce,
	"RWX":  corev1.ReadWriteMany,
	"ROX":  corev1.ReadOnlyMany,
	"RWOP": corev1.ReadWriteOncePod,
}

// ParseAccessMode takes RWO, RWX, ROX or RWOP (any case), or the full
// Kubernetes name (ReadWriteOnce, ...).
func ParseAccessMode(s string) (corev1.PersistentVolumeAccessMode, error) {
	if m, ok := accessModes[strings.ToUpper(s)]; ok {
		return m, nil
	}
	for _, m := range accessModes {
		if strings.EqualFold(s, string(m)) {
			return m, nil
		}
	}
	return "", fmt.Errorf("invalid --access-mode %q: use RWO (one node reads and writes), RWX (many nodes read and write) or ROX (many nodes read)", s)
}

// ShortAccessMode is the short name of a Kubernetes access mode (RWO, ...).
func ShortAccessMode(m corev1.PersistentVolumeAccessMode) string {
	for short, full := range accessModes {
		if full == m {
			return short
		}
	}
	return string(m)
}

// ValidateStorageClass checks --storage-class (a StorageClass's name).
func ValidateStorageClass(sc string) error {
	if sc == "" {
		return nil
	}
	if errs := validation.IsDNS1123Subdomain(sc); len(errs) > 0 {
		return fmt.Errorf("invalid --storage-class %q: a StorageClass name is lower-case letters, digits, '-' and '.'; see 'kubectl get storageclass'", sc)
	}
	return nil
}

// reservedMounts are kernel and runtime file systems a volume must not hide.
var reservedMounts = []string{"/proc", "/sys", "/dev"}

// ValidateMountPath checks where a volume mounts: an absolute path in
// canonical form (no '.', '..' or '//'; a trailing '/' is allowed), not
// the root and not over /proc, /sys or /dev. Its error is an input error.
func ValidateMountPath(p string) error {
	return inputerr.Wrap(validateMountPath(p))
}

func validateMountPath(p string) error {
	bad := func(why string) error {
		return fmt.Errorf("invalid --mount-path %q: %s; use an absolute directory such as /data", p, why)
	}
	switch {
	case p == "":
		return errors.New("--mount-path is required: where the volume appears in the units, e.g. /data")
	case !strings.HasPrefix(p, "/"):
		return bad("it must be absolute")
	case strings.IndexFunc(p, func(r rune) bool { return r < ' ' || r == 0x7f }) >= 0:
		return bad("it contains control characters")
	case strings.Contains(p, ":"):
		return bad("it cannot contain ':'")
	}
	for _, el := range strings.Split(p, "/") {
		if el == ".." {
			return bad("it cannot contain '..'")
		}
	}
	// what the container runtime will mount at: /./proc and //sys are /proc and /sys
	clean := path.Clean(p)
	if clean == "/" {
		return bad("it cannot be the root directory")
	}
	for _, r := range reservedMounts {
		if clean == r || strings.HasPrefix(clean, r+"/") {
			return bad(r + " belongs to the system")
		}
	}
	if clean != cleanMountPath(p) {
		return fmt.Errorf("invalid --mount-path %q: write it without '.' or '//'; did you mean %s?", p, clean)
	}
	return nil
}

// cleanMountPath drops a trailing slash, so /data/ and /data are one path.
func cleanMountPath(p string) string {
	return strings.TrimRight(p, "/")
}
