//go:build gendocs

package main

import (
	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/cli/docgen"
)

// addDevCommands adds the hidden `__gendocs DIR` command. It exists only in
// builds with -tags gendocs (hack/gendocs), so the man page generator and
// its Markdown parser never reach the tug binary.
func addDevCommands(root *cobra.Command, _ *cli.Factory) {
	root.AddCommand(&cobra.Command{
		Use:         "__gendocs DIR",
		Annotations: atLevel(levelNone, argsAre(argDir)),
		Short:       "Write the command reference, man pages and RBAC roles under DIR",
		Hidden:      true,
		Args:        cli.ExactArgs("DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return docgen.Generate(cmd.Root(), args[0])
		},
	})
}
