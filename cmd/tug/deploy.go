package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/deploy"
)

// ---------------------------------------------------------------- app deploy

type appDeployOptions struct {
	Image     string
	Processes []string
	Procfile  string
	Message   string
	// SkipReleasePhase rolls out without running the Procfile's release:
	// command.
	SkipReleasePhase bool
	release          string // the Procfile's release-phase command
	rollout          rolloutFlags
	warnings         []string
	build            buildFlags // without --image (build.go)
}

func newAppDeployCmd(f *cli.Factory) *cobra.Command {
	o := &appDeployOptions{}
	cmd := &cobra.Command{
		Use:   "deploy APP [--image IMAGE | --source DIR --builder IMAGE --repository REPO]",
		Short: "Deploy an image, or build one from source: a new release, rolled out and watched",
		Long: `Deploy an image as a new release of the app and wait until its units run.

Without --image, build it from source first: the folder (--source, default
the current directory) is sent to a build pod running the app's builder
image, which pushes the result to the app's repository; the release then
deploys it by digest. The builder, repository, run image and build timeout
are remembered by the app (see docs/builders.md). A failed build exits 16.

Process types come from --process flags, else a Procfile in the current
directory (or --procfile), else the image's own command runs as "web". A new
process type starts with 1 unit; later deploys keep each type's count. The
web process gets $PORT (8080 unless the config sets PORT) and a Service.

tug watches the rollout and explains a failure as soon as it shows (an image
that cannot be pulled, a crash with its last log lines, a unit that cannot be
scheduled or never gets ready), then rolls back to the last good release and
exits with the failure's code (see docs/exit-codes.md). The timeout restarts
whenever the rollout makes progress.

A Procfile's release: command (a migration, say) is the release phase: it
runs once per deploy in a one-off unit of the new release, before any process
rolls out, with its output on stderr. When it exits non-zero the deploy stops
with exit code 17: nothing is rolled out, the current release keeps running
and the new one is marked failed. --skip-release-phase skips it.`,
		Example: `  tug app deploy shop --builder registry.example.com/builders/static:1 --repository registry.example.com/team/shop
  tug app deploy shop --source ./site -m "new front page"
  tug app deploy shop --image registry.example.com/shop:1.4
  tug app deploy shop --image shop:1.4 --process web='shop serve' --process worker='shop work'
  tug app deploy shop --image shop:1.5 --dry-run`,
		Args: cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if o.Image == "" {
				if err := o.build.prepare(cmd, o); err != nil {
					return err
				}
			}
			procs, err := o.validate(name)
			if err != nil {
				return err
			}
			for _, w := range o.warnings {
				fmt.Fprintln(f.IOStreams.ErrOut, "warning: "+w)
			}
			opts := o.rollout.options()
			opts.SkipReleasePhase = o.SkipReleasePhase
			if o.build.active {
				if o.Image, err = o.build.image(cmd, f, name, o.Message, o.rollout.DryRun); err != nil || o.Image == "" {
					return err
				}
			}
			return roll(cmd, f, name, deploy.WithReleaseCommand(deploy.DeployChange(o.Image, procs, o.Message), o.release), opts, o.rollout.Output, rollVerb{"deployed", "deploying"})
		},
	}
	cmd.Flags().StringVar(&o.Image, "image", "", "Image to deploy; without it, build from --source (see docs/builders.md)")
	cmd.Flags().StringArrayVar(&o.Processes, "process", nil, "A process type and its command, TYPE='command args' (repeatable)")
	cmd.Flags().StringVar(&o.Procfile, "procfile", "", "Procfile to read process types from (default ./Procfile when present)")
	cmd.Flags().StringVarP(&o.Message, "message", "m", "", "Why this deploy, shown in the release history")
	cmd.Flags().BoolVar(&o.SkipReleasePhase, "skip-release-phase", false, "Roll out without running the Procfile's release: command")
	o.rollout.add(cmd, true)
	o.rollout.addDryRun(cmd, "")
	o.build.add(cmd)
	return cmd
}

// validate checks everything that needs no cluster and resolves the
// process types, so bad input fails before anything is read or written.
func (o *appDeployOptions) validate(name string) (map[string]string, error) {
	if err := app.ValidateName(name); err != nil {
		return nil, err
	}
	if !o.build.active {
		if err := app.ValidateImage(o.Image); err != nil {
			return nil, err
		}
	}
	if err := o.rollout.validate(); err != nil {
		return nil, err
	}
	src := app.ProcessSource{Flags: o.Processes, Procfile: o.Procfile}
	if err := src.Validate(); err != nil {
		return nil, err
	}
	procs, release, warnings, err := src.Resolve()
	o.warnings, o.release = warnings, release
	return procs, err
}
