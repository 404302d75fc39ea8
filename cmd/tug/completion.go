package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/complete"
	"tug.dev/tug/pkg/service"
)

// completionOptions are `tug completion`.
type completionOptions struct {
	IO *cli.IOStreams
	// Root is the command tree the script completes.
	Root func() *cobra.Command

	Shell string
}

func newCompletionCmd(f *cli.Factory, runF func(context.Context, *completionOptions) error) *cobra.Command {
	shells := []string{"bash", "zsh", "fish", "powershell"}
	o := &completionOptions{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:         "completion SHELL",
		Annotations: atLevel(levelNone, argsAre(argShell)),
		Short:       "Print a shell completion script (bash, zsh, fish, powershell)",
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
			o.Shell = args[0]
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runCompletion(cmd.Context(), o)
		},
	}
	o.Root = cmd.Root
	return cmd
}

func runCompletion(_ context.Context, o *completionOptions) error {
	root, out := o.Root(), o.IO.Out
	switch o.Shell {
	case "bash":
		return root.GenBashCompletionV2(out, true)
	case "zsh":
		return root.GenZshCompletion(out)
	case "fish":
		return root.GenFishCompletion(out, true)
	default:
		return root.GenPowerShellCompletionWithDesc(out)
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
// flags from the cluster. Arguments complete by the kinds each command
// declares (argsAre, traits.go: an app, unit, release, job, node, pool,
// volume or cluster), so a new command completes without wiring of its own; a
// flag that registered its own completion keeps it.
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
		completeArgs(cmd, f)
		completeFlags(cmd, f)
	}
	walk(root)
}

// completeArgs makes a leaf command's positional arguments complete by
// the kinds it declares, each from its lister; a command that completes
// them itself keeps its own, and one with nothing to list completes no
// files.
func completeArgs(cmd *cobra.Command, f *cli.Factory) {
	if cmd.ValidArgsFunction != nil || len(cmd.ValidArgs) > 0 {
		return
	}
	kinds := argKinds(cmd)
	if !hasArgLister(kinds) {
		if !passesCommandLine(cmd) {
			// Positional arguments are identifiers, never files; only run
			// and exec pass a command line on.
			cmd.ValidArgsFunction = cobra.NoFileCompletions
		}
		return
	}
	cmd.ValidArgsFunction = func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) >= len(kinds) {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		list := argLister(f, kinds[len(args)])
		if list == nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return completeWith(list)(c, args, toComplete)
	}
}

// completeFlags registers the cluster-backed completions of a leaf
// command's own flags: --process and --unit of the app it takes first,
// --pool unless the command completes it itself, and --cluster.
func completeFlags(cmd *cobra.Command, f *cli.Factory) {
	appFirst := takesApp(cmd)
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
	if _, own := cmd.GetFlagCompletionFunc("pool"); local.Lookup("pool") != nil && !own {
		_ = cmd.RegisterFlagCompletionFunc("pool", completeWith(poolLister(f)))
	}
	if local.Lookup("cluster") != nil {
		_ = cmd.RegisterFlagCompletionFunc("cluster", completeWith(clusterLister))
	}
}

func hasArgLister(kinds []argKind) bool {
	for _, k := range kinds {
		if argLister(nil, k) != nil {
			return true
		}
	}
	return false
}

// argLister lists the candidates for one kind of argument, or nil when it
// is not listable (a new name, a host, a key).
func argLister(f *cli.Factory, kind argKind) lister {
	switch kind {
	case argApp:
		return appLister(f)
	case argUnit:
		return unitLister(f)
	case argJob:
		return jobLister(f)
	case argRelease:
		return releaseLister(f)
	case argNode:
		return nodeLister(f)
	case argPool:
		return poolLister(f)
	case argOnOff:
		return func(context.Context, *cobra.Command, []string) ([]string, error) { return []string{"on", "off"}, nil }
	case argVolume:
		return volumeLister(f)
	case argService:
		return serviceLister(f)
	case argCluster:
		return clusterLister
	}
	return nil
}

// appLister lists the apps of every cluster tug's map names, or of the
// current namespace when it names none.
func appLister(f *cli.Factory) lister {
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
}

// releaseLister lists the releases of the app typed first.
func releaseLister(f *cli.Factory) lister {
	return func(ctx context.Context, _ *cobra.Command, args []string) ([]string, error) {
		s, err := storeForApp(ctx, f, args)
		if err != nil {
			return nil, err
		}
		return complete.Releases(ctx, s, args[0])
	}
}

// nodeLister lists the nodes of the cluster --cluster names (every
// cluster when none).
func nodeLister(f *cli.Factory) lister {
	return func(ctx context.Context, c *cobra.Command, _ []string) ([]string, error) {
		ts, err := clusterTargets(f, tugCluster(c))
		if err != nil {
			return nil, err
		}
		return complete.Nodes(ctx, ts)
	}
}

// volumeLister lists the namespace's volumes.
func volumeLister(f *cli.Factory) lister {
	return func(ctx context.Context, _ *cobra.Command, _ []string) ([]string, error) {
		s, err := appStore(f)
		if err != nil {
			return nil, err
		}
		return complete.Volumes(ctx, s)
	}
}

// serviceLister lists the namespace's backing services.
func serviceLister(f *cli.Factory) lister {
	return func(ctx context.Context, _ *cobra.Command, _ []string) ([]string, error) {
		d, err := serviceDeps(ctx, f)
		if err != nil {
			return nil, err
		}
		return service.Names(ctx, d)
	}
}

// clusterLister lists the clusters of tug's map.
func clusterLister(context.Context, *cobra.Command, []string) ([]string, error) {
	cfg, err := loadClusters()
	if err != nil {
		return nil, err
	}
	return complete.Clusters(cfg), nil
}
