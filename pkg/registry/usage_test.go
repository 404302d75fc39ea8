package registry

import (
	"strings"
	"testing"

	"tug.dev/tug/pkg/inputerr"
)

// Every check of what the user typed or piped in fails with an input error
// (exit 2), so commands return it as it is.
func TestValidationErrorsAreInputErrors(t *testing.T) {
	_, pwErr := ReadPassword(strings.NewReader(""))
	for name, err := range map[string]error{
		"server":      ValidateServer(""),
		"username":    ValidateUsername("a:b"),
		"password":    pwErr,
		"credentials": Credentials{Server: "registry.example.com", Username: "ci"}.Validate(),
	} {
		if !inputerr.Is(err) {
			t.Errorf("%s: %v is not an input error", name, err)
		}
	}
	if err := (Credentials{Server: "registry.example.com", Username: "ci", Password: "x"}).Validate(); err != nil {
		t.Errorf("valid credentials: %v", err)
	}
}
