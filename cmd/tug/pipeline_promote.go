package main

import (
	"context"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/promote"
)

// pipelinePromoteOptions are `tug pipeline promote`: an app promote from
// a stage to the next.
type pipelinePromoteOptions struct {
	appPromoteOptions
	Pipeline, Stage string
}

func newPipelinePromoteCmd(f *cli.Factory, runF func(context.Context, *pipelinePromoteOptions) error) *cobra.Command {
	o := &pipelinePromoteOptions{}
	o.IO, o.Prompter, o.ContextName = f.IOStreams, f.Prompter, f.ContextName
	cmd := &cobra.Command{
		Use:         "promote PIPELINE STAGE",
		Annotations: atLevel(access.Developer, argsAre(argPipeline, argStage)),
		Short:       "Promote a stage's image to the next stage ('tug app promote' between them)",
		Long: `Promote the image stage STAGE (NAMESPACE/APP, its namespace, or its app's name
when only one stage has it) runs to the next stage of the pipeline, as
'tug app promote' does: the differences first, asks on a terminal (--yes
elsewhere), refuses per-stage build env without --force, --dry-run shows
only the differences.`,
		Example: `  tug pipeline promote shop staging --yes
  tug pipeline promote shop staging/shop --dry-run`,
		Args: cli.ExactArgs("PIPELINE", "STAGE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Pipeline, o.Stage = args[0], args[1]
			if err := o.rollout.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runPipelinePromote(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	cmd.Flags().StringVarP(&o.Message, "message", "m", "", "Why this promote, shown in the release history")
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "Promote without asking")
	cmd.Flags().BoolVar(&o.Force, "force", false, "Promote although the image was built with a build env the next stage sets otherwise")
	o.rollout.add(cmd, true, &o.Changer.WaitLock)
	o.rollout.addDryRun(cmd, "Show what differs between the two stages; change nothing")
	return cmd
}

func runPipelinePromote(ctx context.Context, o *pipelinePromoteOptions) error {
	d, err := o.Changer.Deps(ctx)
	if err != nil {
		return err
	}
	stages, err := promote.FindPipeline(ctx, d.Client, d.Namespace, o.Pipeline)
	if err != nil {
		return err
	}
	from, to, err := promote.Next(stages, o.Stage)
	if err != nil {
		return err
	}
	o.Source, o.Target = nsApp{Namespace: from.Namespace, App: from.App}, nsApp{Namespace: to.Namespace, App: to.App}
	return runAppPromote(ctx, &o.appPromoteOptions)
}
