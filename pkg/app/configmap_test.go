package app

import "testing"

func TestConfigDiff(t *testing.T) {
	tests := []struct {
		old, cur ConfigMap
		want     string
	}{
		{ConfigMap{}, ConfigMap{"B": "1", "A": "2"}, "+A, +B"},
		{ConfigMap{"A": "1", "B": "2", "C": "3"}, ConfigMap{"A": "1", "B": "9", "D": "4"}, "~B, +D, -C"},
		{nil, nil, ""},
		{ConfigMap{"A": "secret-old"}, ConfigMap{"A": "secret-new"}, "~A"},
	}
	for _, tt := range tests {
		if got := tt.old.Diff(tt.cur); got != tt.want {
			t.Errorf("%v.Diff(%v) = %q, want %q", tt.old, tt.cur, got, tt.want)
		}
	}
	if !ConfigMap(nil).Equal(ConfigMap{}) || (ConfigMap{"A": ""}).Equal(ConfigMap{"B": ""}) ||
		(ConfigMap{"A": "1"}).Equal(ConfigMap{"A": "2"}) || !(ConfigMap{"A": "1"}).Equal(ConfigMap{"A": "1"}) {
		t.Error("ConfigMap.Equal is wrong")
	}
}
