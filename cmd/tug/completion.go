package main

import (
	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
)

func newCompletionCmd(f *cli.Factory) *cobra.Command {
	shells := []string{"bash", "zsh", "fish", "powershell"}
	return &cobra.Command{
		Use:   "completion SHELL",
		Short: "Print a shell completion script (bash, zsh, fish, powershell)",
		Long: `Print a completion script for the given shell. Load it into the current
shell, or install it where your shell looks for completions.`,
		Example: `  source <(tug completion bash)
  tug completion zsh > "${fpath[1]}/_tug"
  tug completion fish > ~/.config/fish/completions/tug.fish
  tug completion powershell | Out-String | Invoke-Expression`,
		Args:      cli.OneOfArgs("SHELL", shells...),
		ValidArgs: shells,
		GroupID:   "other",
		RunE: func(cmd *cobra.Command, args []string) error {
			root, out := cmd.Root(), f.IOStreams.Out
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(out, true)
			case "zsh":
				return root.GenZshCompletion(out)
			case "fish":
				return root.GenFishCompletion(out, true)
			default:
				return root.GenPowerShellCompletionWithDesc(out)
			}
		},
	}
}
