package service

import (
	"slices"
	"testing"
)

// An update --uri must not change the binding's keys: bound releases
// reference each one, and a key gone fails their new units.
func TestParseURIHasEveryKeyWhateverTheURIHolds(t *testing.T) {
	full, err := ParseURI("postgres://u:p@db.example:5433/shop")
	if err != nil {
		t.Fatal(err)
	}
	bare, err := ParseURI("postgres://db.example")
	if err != nil {
		t.Fatal(err)
	}
	keys := func(m map[string]string) []string {
		var k []string
		for key := range m {
			k = append(k, key)
		}
		slices.Sort(k)
		return k
	}
	if !slices.Equal(keys(full), keys(bare)) {
		t.Errorf("keys of a full URI %v, of a bare one %v: want the same", keys(full), keys(bare))
	}
	if bare["password"] != "" || bare["database"] != "" || bare["port"] != "5432" || full["database"] != "shop" || full["username"] != "u" {
		t.Errorf("values: bare %v full %v", bare, full)
	}
}
