package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/service"
)

func newClusterPlansCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plans",
		Short: "Publish service plans every user of the cluster can create services from (admins)",
		Long: `A plan is data (docs/services.md): the objects a service is made of, where
its credentials come from, the keys of its binding, and how to connect, dump
and restore. Published plans live in ConfigMap kube-public/tug-service-plans,
readable by every authenticated user; 'tug service plans' lists them with
tug's built-in ones.`,
		Args: cli.GroupArgs,
		RunE: cli.GroupRunE,
	}
	cmd.AddCommand(newClusterPlansSetCmd(f, nil), newClusterPlansRemoveCmd(f, nil))
	return cmd
}

// clusterPlansSetOptions are `tug cluster plans set`.
type clusterPlansSetOptions struct {
	IO   *cli.IOStreams
	Deps func(context.Context) (service.Deps, error)
	File string
}

func newClusterPlansSetCmd(f *cli.Factory, runF func(context.Context, *clusterPlansSetOptions) error) *cobra.Command {
	o := &clusterPlansSetOptions{IO: f.IOStreams, Deps: serviceDepsFor(f)}
	cmd := &cobra.Command{
		Use:         "set -f PLAN.yaml",
		Annotations: atLevel(levelClusterAdmin, nil),
		Short:       "Publish a plan, or replace the published plan of its name (admins)",
		Example:     "  tug cluster plans set -f redis.yaml\n  cat plan.yaml | tug cluster plans set -f -",
		Args:        cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.File == "" {
				return inputerr.Errorf("give the plan with -f FILE (- for stdin)")
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runClusterPlansSet(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVarP(&o.File, "file", "f", "", "The plan (YAML), - for stdin (required)")
	return cmd
}

func runClusterPlansSet(ctx context.Context, o *clusterPlansSetOptions) error {
	var data []byte
	var err error
	if o.File == "-" {
		data, err = io.ReadAll(o.IO.In)
	} else {
		data, err = os.ReadFile(o.File)
	}
	if err != nil {
		return inputerr.Errorf("reading the plan: %v", err)
	}
	if _, err := service.ParsePlan(data); err != nil {
		return err // before any client is made
	}
	d, err := o.Deps(ctx)
	if err != nil {
		return err
	}
	p, err := service.Publish(ctx, d.Client, data)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(o.IO.Out, "plan %q published (versions %v); users see it in 'tug service plans'\n", p.Name, p.Versions)
	return err
}

// clusterPlansRemoveOptions are `tug cluster plans remove`.
type clusterPlansRemoveOptions struct {
	IO   *cli.IOStreams
	Deps func(context.Context) (service.Deps, error)
	Name string
}

func newClusterPlansRemoveCmd(f *cli.Factory, runF func(context.Context, *clusterPlansRemoveOptions) error) *cobra.Command {
	o := &clusterPlansRemoveOptions{IO: f.IOStreams, Deps: serviceDepsFor(f)}
	cmd := &cobra.Command{
		Use:         "remove NAME",
		Aliases:     []string{"rm", "delete"},
		Annotations: atLevel(levelClusterAdmin, argsAre(argNewName)),
		Short:       "Unpublish a plan; services made from it keep running (admins)",
		Example:     "  tug cluster plans remove redis",
		Args:        cli.ExactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runClusterPlansRemove(cmd.Context(), o)
		},
	}
	return cmd
}

func runClusterPlansRemove(ctx context.Context, o *clusterPlansRemoveOptions) error {
	d, err := o.Deps(ctx)
	if err != nil {
		return err
	}
	if err := service.Unpublish(ctx, d.Client, o.Name); err != nil {
		return err
	}
	_, err = fmt.Fprintf(o.IO.Out, "plan %q unpublished; services made from it keep their plan\n", o.Name)
	return err
}
