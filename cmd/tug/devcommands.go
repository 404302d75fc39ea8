//go:build !gendocs

package main

import (
	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
)

// addDevCommands adds nothing to release builds; see gendocs.go.
func addDevCommands(*cobra.Command, *cli.Factory) {}
