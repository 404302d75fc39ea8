package main

import (
	"strings"
	"testing"

	"tug.dev/tug/pkg/node"
)

// What node remove prints says what happened to each pod and process, and
// never reads as done when it was only a dry run or the node stayed.
func TestPrintRemoveResult(t *testing.T) {
	res := &node.RemoveResult{Node: "node7", Cluster: "prod",
		Evicted: []node.PodRef{{Namespace: "dev", Name: "shop-web-1", App: "shop", Process: "web"}, {Namespace: "kube-system", Name: "dns-1"}},
		Skipped: []node.SkippedPod{{PodRef: node.PodRef{Namespace: "kube-system", Name: "proxy-x"}, Reason: "DaemonSet"}},
		Surges: []node.Surge{
			{Namespace: "dev", App: "shop", Process: "web", From: 1, To: 2, Restored: true},
			{Namespace: "dev", App: "blog", Process: "web", From: 1, To: 2},
		},
		Deleted: true}
	for _, tt := range []struct {
		name   string
		dryRun bool
		kept   bool
		want   []string
		never  []string
	}{
		{"removed", false, false, []string{"moved 2 pods", "evicted dev/shop-web-1 (unit of shop, web)", "evicted kube-system/dns-1\n",
			"surged to 2 while moving, restored", "count changed since, left as is", "left kube-system/proxy-x: DaemonSet", "node deleted"}, []string{"would"}},
		{"dry run", true, false, []string{"would move 2 pods", "evict dev/shop-web-1", "(would surge first)", "then the node would be deleted"}, []string{"node deleted", "restored"}},
		{"drained", false, true, []string{"the node stays, cordoned", "'tug node update node7 --enable'"}, []string{"node deleted"}},
		{"dry run of a drain", true, true, []string{"the node would stay, cordoned"}, []string{"node deleted"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := *res
			r.DryRun, r.Deleted = tt.dryRun, !tt.kept
			ios, out, _ := bufferIO()
			if err := printRemoveResult(ios, &r); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("missing %q in\n%s", w, out)
				}
			}
			for _, n := range tt.never {
				if strings.Contains(out.String(), n) {
					t.Errorf("%q in\n%s", n, out)
				}
			}
		})
	}
}
