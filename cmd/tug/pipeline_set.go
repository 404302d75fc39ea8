package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/promote"
)

// pipelineSetOptions are `tug pipeline set`.
type pipelineSetOptions struct {
	IO        *cli.IOStreams
	Changer   appChanger
	Namespace func() (string, error)

	Name   string
	Stages []string
	Output cli.OutputOptions
}

// pipelineSet is what `pipeline set -o json` prints (docs/output.md).
type pipelineSet struct {
	Name   string   `json:"name"`
	Stages []string `json:"stages"`
	// Removed are the apps that were stages and are no more.
	Removed []string `json:"removed"`
}

func newPipelineSetCmd(f *cli.Factory, runF func(context.Context, *pipelineSetOptions) error) *cobra.Command {
	o := &pipelineSetOptions{IO: f.IOStreams, Namespace: f.Namespace}
	cmd := &cobra.Command{
		Use:         "set PIPELINE STAGE...",
		Annotations: atLevel(access.Operator, argsAre(argPipeline)),
		Short:       "Set a pipeline's stages, in order, on the record of every stage",
		Long: `Set pipeline PIPELINE to the apps STAGE..., in order, each NAMESPACE/APP (or APP
in the current namespace). Every stage must exist; each stage's record keeps
the whole list. Apps that were stages of the pipeline and are no more are
taken off it (said), as is any app of the stages' namespaces whose record
names a pipeline of that name. A set stopped part way leaves the stages' records
disagreeing, which 'pipeline status' and 'pipeline promote' refuse: run
the same set again.`,
		Example: `  tug pipeline set shop dev/shop staging/shop prod/shop`,
		Args:    cli.Args("PIPELINE", "STAGE..."),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name, o.Stages = args[0], args[1:]
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runPipelineSet(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	cli.AddFormatFlag(cmd, &o.Output.Format)
	takesLock(cmd, &o.Changer.WaitLock)
	return cmd
}

func runPipelineSet(ctx context.Context, o *pipelineSetOptions) error {
	ns, err := o.Namespace()
	if err != nil {
		return err
	}
	stages := make([]promote.Stage, len(o.Stages))
	names := make([]string, len(o.Stages))
	for i, s := range o.Stages {
		if stages[i], err = promote.ParseStage(s, ns); err != nil {
			return err
		}
		names[i] = stages[i].String()
	}
	if err := promote.ValidatePipeline(o.Name, stages); err != nil {
		return err
	}
	d, err := o.Changer.Deps(ctx)
	if err != nil {
		return err
	}
	removed, err := promote.SetPipeline(ctx, d, o.Name, stages)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.IO.ErrOut, "pipeline %s: %s\n", o.Name, strings.Join(names, " -> "))
	if len(removed) > 0 {
		fmt.Fprintf(o.IO.ErrOut, "no longer stages: %s\n", strings.Join(removed, ", "))
	}
	if o.Output.Format == cli.OutputTable || o.Output.Format == "" {
		return nil
	}
	return o.Output.Print(o.IO, pipelineSet{Name: o.Name, Stages: names, Removed: removed}, nil)
}
