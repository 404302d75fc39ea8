package app

import "testing"

func TestRunsLikeIgnoresWhatDescribesARelease(t *testing.T) {
	a := &Release{App: "shop", Version: 1, Image: "i@sha256:1", ImageID: "i@sha256:1", Kind: KindDeploy, Message: "one",
		Processes: map[string]string{"web": "w"}, Status: StatusDeployed, ConfigKeys: []string{"A"}}
	b := &Release{App: "shop", Version: 2, Image: "i@sha256:1", Kind: KindDeploy, Message: "two",
		Processes: map[string]string{"web": "w"}, Status: StatusPending}
	if !a.RunsLike(b) {
		t.Error("releases differing only in number, message, status and image ID: not the same run")
	}
	for name, change := range map[string]func(r *Release){
		"image":           func(r *Release) { r.Image = "i@sha256:2" },
		"command":         func(r *Release) { r.Processes["web"] = "other" },
		"release command": func(r *Release) { r.ReleaseCommand = "./migrate" },
		"limits":          func(r *Release) { r.Limits = map[string]Limits{"web": {Memory: "1Gi"}} },
		"pool":            func(r *Release) { r.Pool = "east" },
		"built with":      func(r *Release) { r.BuiltWith = &BuiltWith{Builder: "x"} },
	} {
		c := *b
		c.Processes = map[string]string{"web": "w"}
		change(&c)
		if a.RunsLike(&c) {
			t.Errorf("releases differing in %s: the same run", name)
		}
	}
}
