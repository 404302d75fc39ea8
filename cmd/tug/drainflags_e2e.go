//go:build e2e

package main

import (
	"github.com/spf13/pflag"

	"tug.dev/tug/pkg/node"
)

// addDrainTestFlags gives node remove a drain that keeps the Node,
// optionally limited to some pods: what the end-to-end tests use on a
// shared cluster's real nodes. Only a binary built with -tags e2e (the e2e
// suite's) has them; users' binaries do not (drainflags.go).
func addDrainTestFlags(fl *pflag.FlagSet, o *node.RemoveOptions) {
	fl.BoolVar(&o.KeepNode, "keep-node", false, "Move the pods but keep the Node object, cordoned")
	fl.StringVar(&o.PodSelector, "pod-selector", "", "With --keep-node: only move pods matching this label selector")
	fl.StringVar(&o.PodNamespace, "pod-namespace", "", "With --keep-node: only move pods of this namespace")
	_ = fl.MarkHidden("keep-node")
	_ = fl.MarkHidden("pod-selector")
	_ = fl.MarkHidden("pod-namespace")
}
