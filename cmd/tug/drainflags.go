//go:build !e2e

package main

import (
	"github.com/spf13/pflag"

	"tug.dev/tug/pkg/node"
)

// addDrainTestFlags adds nothing to a user's binary: the drain flags of
// the end-to-end tests are in drainflags_e2e.go, built with -tags e2e.
func addDrainTestFlags(*pflag.FlagSet, *node.RemoveOptions) {}
