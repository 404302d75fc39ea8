package protocol

import "testing"

func TestCompareLayers(t *testing.T) {
	a, b, c, d := Layer{"sha256:a", 100}, Layer{"sha256:b", 20}, Layer{"sha256:c", 3}, Layer{"sha256:d", 4000}
	for _, tc := range []struct {
		name           string
		previous, next []Layer
		want           Upload
	}{
		{"first build: all new", nil, []Layer{a, b, c}, Upload{NewLayers: 3, NewBytes: 123}},
		{"one changed layer", []Layer{a, b, c}, []Layer{a, b, d}, Upload{PreviousImage: "r@x", NewLayers: 1, NewBytes: 4000, ReusedLayers: 2, ReusedBytes: 120}},
		{"nothing changed", []Layer{a, b}, []Layer{a, b}, Upload{PreviousImage: "r@x", ReusedLayers: 2, ReusedBytes: 120}},
		{"a layer listed twice is one blob", []Layer{a}, []Layer{a, d, d, a}, Upload{PreviousImage: "r@x", NewLayers: 1, NewBytes: 4000, ReusedLayers: 1, ReusedBytes: 100}},
		{"layers the new image dropped do not count", []Layer{a, b, c, d}, []Layer{c}, Upload{PreviousImage: "r@x", ReusedLayers: 1, ReusedBytes: 3}},
	} {
		prev := ""
		if tc.previous != nil {
			prev = "r@x"
		}
		if got := CompareLayers(prev, tc.previous, tc.next); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
