package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/promote"
)

// pipelineStatusOptions are `tug pipeline status`.
type pipelineStatusOptions struct {
	IO        *cli.IOStreams
	Client    func() (kubernetes.Interface, error)
	Namespace func() (string, error)

	Name   string
	Output cli.OutputOptions
}

func newPipelineStatusCmd(f *cli.Factory, runF func(context.Context, *pipelineStatusOptions) error) *cobra.Command {
	o := &pipelineStatusOptions{IO: f.IOStreams, Client: f.KubeClient, Namespace: f.Namespace}
	cmd := &cobra.Command{
		Use:         "status PIPELINE",
		Annotations: atLevel(access.Viewer, argsAre(argPipeline)),
		Short:       "Show each stage's release and digest, and how far the next stage is behind it",
		Long: `Show each stage of the pipeline: its release, the digest it runs, where that
image was promoted from, and how many images the next stage has not got
("next behind": 0 when the next stage runs this one's digest). The pipeline
is read from a stage in the current namespace (-n).`,
		Example: `  tug pipeline status shop -n staging
  tug pipeline status shop -o json`,
		Args: cli.ExactArgs("PIPELINE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runPipelineStatus(cmd.Context(), o)
		},
	}
	cli.AddOutputFlags(cmd, &o.Output)
	return cmd
}

func runPipelineStatus(ctx context.Context, o *pipelineStatusOptions) error {
	ns, err := o.Namespace()
	if err != nil {
		return err
	}
	c, err := o.Client()
	if err != nil {
		return err
	}
	stages, err := promote.FindPipeline(ctx, c, ns, o.Name)
	if err != nil {
		return err
	}
	out := promote.Status(ctx, c, stages)
	if err := o.Output.Print(o.IO, out, func() error {
		t := cli.NewTable("stage", "release", "digest", "promoted from", "next behind")
		for _, s := range out {
			rel, next := "", ""
			if s.Release > 0 {
				rel = fmt.Sprintf("v%d", s.Release)
			}
			if s.Error != "" {
				rel = "error: " + s.Error
			}
			switch {
			case s.NextBehind == nil:
			case *s.NextBehind < 0:
				next = "? (the next runs none of its images)"
			case *s.NextBehind == 0:
				next = "0 (same digest)"
			default:
				next = fmt.Sprintf("%d %s", *s.NextBehind, map[bool]string{true: "image", false: "images"}[*s.NextBehind == 1])
			}
			t.AddRow(s.Stage, dash(rel), dash(shortDigest(s.Digest)), dash(s.PromotedFrom.String()), dash(next))
		}
		return t.Render(o.IO, o.Output.NoHeaders)
	}); err != nil {
		return err
	}
	// a stage that could not be read fails the command (exit 1), after
	// the rows that could: a script must not take it for the whole status
	var unread []string
	for _, s := range out {
		if s.Error != "" {
			unread = append(unread, s.Stage)
		}
	}
	if len(unread) > 0 {
		return fmt.Errorf("could not read %d of %d stages of pipeline %q (%s): see the error in their rows", len(unread), len(out), o.Name, strings.Join(unread, ", "))
	}
	return nil
}
