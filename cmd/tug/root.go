package main

import (
	"strings"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
)

// commandName is how the user invoked tug. Installed as kubectl-tug, the same
// binary is the kubectl plugin `kubectl tug`, and help should say so.
func commandName(argv0 string) string {
	// Not filepath.Base: a Windows path must work whatever the build OS.
	base := argv0[strings.LastIndexAny(argv0, `/\`)+1:]
	base = strings.TrimSuffix(base, ".exe")
	if base == "kubectl-tug" {
		return "kubectl tug"
	}
	return "tug"
}

// advancedGlobalFlags are accepted by every command but shown only by
// `tug options`.
var advancedGlobalFlags = []string{
	"as-group", "as-uid", "as-user-extra",
	"certificate-authority", "client-certificate", "client-key", "insecure-skip-tls-verify", "tls-server-name",
	"disable-compression", "proxy-url", "server", "token", "v",
}

func newRootCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tug",
		Short: "Heroku-style app workflow on any Kubernetes cluster",
		Long: `tug deploys and runs apps on Kubernetes the way Heroku, tsuru and Deis do:
create an app, deploy an image, scale its processes, set its config, roll back,
run one-off commands. It talks directly to the cluster with your kubeconfig;
there is no server to install, and the cluster holds all of tug's state.

Start with 'tug doctor' to check that your kubeconfig works and what you may do.`,
		Args:          cli.GroupArgs,
		RunE:          cli.GroupRunE,
		SilenceUsage:  true, // a usage error gets a hint line, not the whole usage text
		SilenceErrors: true, // main prints errors, once, in one format
		CompletionOptions: cobra.CompletionOptions{
			DisableDefaultCmd: true, // we have our own `completion` command
		},
	}
	asPlugin(cmd, f.CommandName)
	cmd.SuggestionsMinimumDistance = 2
	cmd.SetFlagErrorFunc(cli.FlagErrorFunc)
	cmd.SetIn(f.IOStreams.In)
	cmd.SetOut(f.IOStreams.Out)
	cmd.SetErr(f.IOStreams.ErrOut)

	f.ConfigFlags.AddFlags(cmd.PersistentFlags())
	f.IOStreams.AddFlags(cmd.PersistentFlags())
	f.AddFlags(cmd.PersistentFlags())
	// kubectl's connection flags all work, but most are for unusual setups;
	// listing twenty of them under every command buries the command's own
	// flags. `tug options` lists them all, as `kubectl options` does.
	for _, name := range advancedGlobalFlags {
		_ = cmd.PersistentFlags().MarkHidden(name)
	}
	// A CI script passes --yes to whatever it runs; on a command that asks
	// nothing it means nothing, and must not be an unknown flag. Commands
	// that ask define their own --yes, which takes precedence.
	cmd.PersistentFlags().BoolP("yes", "y", false, "Answer yes to any question (commands that ask nothing accept it and ignore it)")
	_ = cmd.PersistentFlags().MarkHidden("yes")

	cmd.AddGroup(
		&cobra.Group{ID: "apps", Title: "App commands:"},
		&cobra.Group{ID: "cluster", Title: "Cluster commands:"},
		&cobra.Group{ID: "other", Title: "Other commands:"},
	)
	cmd.AddCommand(topCommands(f)...)
	cmd.SetHelpCommandGroupID("other")
	suggestHerokuVerbs(cmd)
	addDevCommands(cmd, f)
	addDynamicCompletion(cmd, f)
	guardLevels(cmd, f)
	routeAppCommands(cmd, f)
	appFromManifest(cmd, f)
	return cmd
}

// topCommands are tug's commands under the root, in the order help lists
// them within their groups.
func topCommands(f *cli.Factory) []*cobra.Command {
	return []*cobra.Command{
		newAppCmd(f),
		newEnvCmd(f),
		newReleaseCmd(f),
		newRunCmd(f, nil),
		newShellCmd(f, nil),
		newLogsCmd(f, nil),
		newUnitCmd(f),
		newRegistryCmd(f),
		newVolumeCmd(f),
		newServiceCmd(f),
		newJobCmd(f),
		newDomainCmd(f),
		newCertCmd(f),
		newReviewCmd(f),
		newPipelineCmd(f),
		newNodeCmd(f),
		newPoolCmd(f),
		newClusterCmd(f),
		newNodeContainerCmd(f),
		newAccessCmd(f),
		newDoctorCmd(f, nil),
		newVersionCmd(f, nil),
		newCompletionCmd(f, nil),
		newOptionsCmd(f, nil),
	}
}

// asPlugin names the root command as it was invoked ("kubectl tug" as a
// kubectl plugin); "tug" changes nothing.
func asPlugin(cmd *cobra.Command, name string) {
	if name == "tug" {
		return
	}
	cmd.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: name}
	// Examples and hints are written as 'tug ...'; as a kubectl plugin
	// they should read 'kubectl tug ...'. Rendered when help is shown, so
	// the docs generated from the tree keep the canonical name.
	help := cmd.HelpFunc()
	cmd.SetHelpFunc(func(c *cobra.Command, args []string) {
		c.Example = cli.ExampleWithCommandName(c.Example, name)
		c.Long = cli.WithCommandName(c.Long, name)
		help(c, args)
	})
}

// herokuVerbs are the top-level words of Heroku's CLI (and tsuru's, Deis's)
// that tug has under a noun, with where: `tug deploy` is an unknown command
// that says "did you mean 'tug app deploy'?" (cli.GroupArgs reads the
// targets' SuggestFor), flags included.
var herokuVerbs = map[string][]string{
	"app create":       {"create", "apps:create"},
	"app list":         {"apps", "list"},
	"app info":         {"info", "apps:info", "status"},
	"app remove":       {"destroy", "apps:destroy"},
	"app deploy":       {"deploy", "push", "releases:create"},
	"app scale":        {"scale", "ps:scale"},
	"app restart":      {"restart", "ps:restart"},
	"app stop":         {"stop"},
	"app start":        {"start"},
	"app address":      {"open", "address"},
	"unit list":        {"ps"},
	"unit kill":        {"ps:stop", "ps:kill", "kill"},
	"env get":          {"config", "config:get", "env list", "env ls", "env show"},
	"env set":          {"config:set", "config:add"},
	"env unset":        {"config:unset", "config:remove"},
	"release list":     {"releases"},
	"release rollback": {"rollback", "releases:rollback"},
	"domain list":      {"domains"},
	"domain add":       {"domains:add"},
	"domain remove":    {"domains:remove"},
	"app exec":         {"exec", "run:inside"},
	"shell":            {"ps:exec", "ssh"},
}

func suggestHerokuVerbs(root *cobra.Command) {
	for path, words := range herokuVerbs {
		c, rest, err := root.Find(strings.Fields(path))
		if err != nil || len(rest) > 0 || c == root {
			panic("herokuVerbs: no command " + path) // TestHerokuVerbsSuggestTugCommands
		}
		c.SuggestFor = append(c.SuggestFor, words...)
	}
}
