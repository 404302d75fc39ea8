package main

import (
	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
)

func newAccessCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "access",
		Short: "Grant, list and revoke who may do what in a namespace, and CI tokens",
		Long: `Access to a namespace's apps is one of four levels, each a Role tug makes in
the namespace (docs/access.md):

  viewer     list apps, units, domains and jobs, read logs; never config values
  developer  viewer, and deploy, scale, restart, run, shell, env, rollback
  operator   developer, and domains, certificates, allow lists, maintenance,
             jobs, volumes, registry credentials
  admin      operator, and app create and remove, and access itself

A grant is a RoleBinding labelled as tug's; 'tug access list' shows the
bindings tug did not make too, and tug never changes those. A CI job gets a
token of its own ('tug access token'), revoked with 'tug access remove ci:NAME'.`,
		Args:    cli.GroupArgs,
		RunE:    cli.GroupRunE,
		GroupID: "cluster",
	}
	cmd.AddCommand(newAccessAddCmd(f, nil), newAccessListCmd(f, nil), newAccessRemoveCmd(f, nil), newAccessTokenCmd(f, nil))
	return cmd
}
