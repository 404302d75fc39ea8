package main

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/complete"
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

// completionTimeout bounds what one <Tab> may wait for the cluster. A
// completion that fails or runs out of time offers nothing and prints
// nothing: the user is typing, not asking for a diagnosis.
const completionTimeout = 3 * time.Second

type lister func(ctx context.Context, cmd *cobra.Command, args []string) ([]string, error)

func completeWith(list lister) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		ctx, cancel := context.WithTimeout(ctx, completionTimeout)
		defer cancel()
		candidates, err := list(ctx, cmd, args)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return complete.Filter(candidates, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// addDynamicCompletion teaches every command to complete its arguments and
// flags from the cluster. Arguments are recognised by the words of each
// command's Use line (APP, UNIT, vN, NODE, POOL, a volume's or cluster's
// NAME), so a new command completes without wiring of its own.
func addDynamicCompletion(root *cobra.Command, f *cli.Factory) {
	_ = root.RegisterFlagCompletionFunc("context", completeWith(func(context.Context, *cobra.Command, []string) ([]string, error) {
		raw, err := f.ConfigFlags.ToRawKubeConfigLoader().RawConfig()
		return complete.Contexts(&raw), err
	}))
	_ = root.RegisterFlagCompletionFunc("cluster", completeWith(func(context.Context, *cobra.Command, []string) ([]string, error) {
		raw, err := f.ConfigFlags.ToRawKubeConfigLoader().RawConfig()
		return complete.KubeconfigClusters(&raw), err
	}))
	_ = root.RegisterFlagCompletionFunc("namespace", completeWith(func(ctx context.Context, _ *cobra.Command, _ []string) ([]string, error) {
		client, err := f.KubeClient()
		if err != nil {
			return nil, err
		}
		return complete.Namespaces(ctx, client)
	}))
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
		if cmd.HasSubCommands() {
			return
		}
		words := positionalWords(cmd.Use)
		if cmd.ValidArgsFunction == nil && len(cmd.ValidArgs) == 0 && !hasArgLister(cmd, words) && !strings.Contains(cmd.Use, " -- ") {
			// Positional arguments are identifiers, never files; only run
			// and exec pass a command line on.
			cmd.ValidArgsFunction = cobra.NoFileCompletions
		}
		if cmd.ValidArgsFunction == nil && len(cmd.ValidArgs) == 0 && hasArgLister(cmd, words) {
			cmd.ValidArgsFunction = func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
				if len(args) >= len(words) {
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
				list := argLister(f, c, words[len(args)])
				if list == nil {
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
				return completeWith(list)(c, args, toComplete)
			}
		}
		appFirst := len(words) > 0 && words[0] == "APP"
		local := cmd.LocalNonPersistentFlags()
		if appFirst && local.Lookup("process") != nil {
			_ = cmd.RegisterFlagCompletionFunc("process", completeWith(func(ctx context.Context, _ *cobra.Command, args []string) ([]string, error) {
				s, err := storeForApp(ctx, f, args)
				if err != nil {
					return nil, err
				}
				return complete.Processes(ctx, s, args[0])
			}))
		}
		if appFirst && local.Lookup("unit") != nil {
			_ = cmd.RegisterFlagCompletionFunc("unit", completeWith(unitLister(f)))
		}
		if local.Lookup("pool") != nil && cmd.Parent().Name() != "cluster" {
			_ = cmd.RegisterFlagCompletionFunc("pool", completeWith(poolLister(f)))
		}
		if local.Lookup("cluster") != nil {
			_ = cmd.RegisterFlagCompletionFunc("cluster", completeWith(func(context.Context, *cobra.Command, []string) ([]string, error) {
				cfg, err := loadClusters()
				if err != nil {
					return nil, err
				}
				return complete.Clusters(cfg), nil
			}))
		}
	}
	walk(root)
}

// positionalWords are the argument words of a Use line: "kill APP UNIT" ->
// APP UNIT; "rollback APP [vN]" -> APP vN. They end at the first flag or
// "--", and a repeated word ("KEY...") is not completed.
func positionalWords(use string) []string {
	var words []string
	for _, w := range strings.Fields(use)[1:] {
		if strings.HasPrefix(w, "-") || strings.HasPrefix(w, "[-") || strings.Contains(w, "...") {
			break
		}
		words = append(words, strings.Trim(w, "[]"))
	}
	return words
}

func hasArgLister(cmd *cobra.Command, words []string) bool {
	for _, w := range words {
		if argLister(nil, cmd, w) != nil {
			return true
		}
	}
	return false
}

// argLister lists the candidates for one argument word of cmd, or nil when
// the word names something new (app create NAME) or not listable.
func argLister(f *cli.Factory, cmd *cobra.Command, word string) lister {
	group := ""
	if cmd.HasParent() {
		group = cmd.Parent().Name()
	}
	switch {
	case word == "APP" && !(group == "app" && cmd.Name() == "create"):
		return func(ctx context.Context, _ *cobra.Command, _ []string) ([]string, error) {
			if cls := appClusters(f); len(cls) > 0 {
				return complete.AppsOfClusters(ctx, cls, func(kubeContext string) (*app.Store, error) {
					return appStore(f.ForContext(kubeContext))
				})
			}
			s, err := appStore(f)
			if err != nil {
				return nil, err
			}
			return complete.Apps(ctx, s)
		}
	case word == "UNIT":
		return unitLister(f)
	case word == "vN":
		return func(ctx context.Context, _ *cobra.Command, args []string) ([]string, error) {
			s, err := storeForApp(ctx, f, args)
			if err != nil {
				return nil, err
			}
			return complete.Releases(ctx, s, args[0])
		}
	case word == "NODE":
		return func(ctx context.Context, c *cobra.Command, _ []string) ([]string, error) {
			ts, err := clusterTargets(f, tugCluster(c))
			if err != nil {
				return nil, err
			}
			return complete.Nodes(ctx, ts)
		}
	case word == "POOL":
		return poolLister(f)
	case word == "on|off":
		return func(context.Context, *cobra.Command, []string) ([]string, error) { return []string{"on", "off"}, nil }
	case word == "NAME" && group == "volume" && cmd.Name() != "create":
		return func(ctx context.Context, _ *cobra.Command, _ []string) ([]string, error) {
			s, err := appStore(f)
			if err != nil {
				return nil, err
			}
			return complete.Volumes(ctx, s)
		}
	case word == "NAME" && group == "cluster" && cmd.Name() != "add":
		return func(context.Context, *cobra.Command, []string) ([]string, error) {
			cfg, err := loadClusters()
			if err != nil {
				return nil, err
			}
			return complete.Clusters(cfg), nil
		}
	}
	return nil
}
