package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/text"
)

func newReleaseCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "release",
		Short:   "List releases, show one, roll back",
		Args:    cli.GroupArgs,
		RunE:    cli.GroupRunE,
		GroupID: "apps",
	}
	cmd.AddCommand(newReleaseListCmd(f, nil), newReleaseInfoCmd(f, nil), newReleaseRollbackCmd(f, nil), newReleasePromoteCmd(f, nil), newReleaseAbortCmd(f, nil))
	return cmd
}

// releaseListOptions are `tug release list`.
type releaseListOptions struct {
	IO    *cli.IOStreams
	Store func() (*app.Store, error)

	App    string
	Output cli.OutputOptions
}

func newReleaseListCmd(f *cli.Factory, runF func(context.Context, *releaseListOptions) error) *cobra.Command {
	o := &releaseListOptions{IO: f.IOStreams, Store: storeFor(f)}
	cmd := &cobra.Command{
		Use:         "list APP",
		Annotations: atLevel(access.Viewer, argsAre(argApp)),
		Aliases:     []string{"ls"},
		Short:       "List an app's releases, newest first",
		Example: `  tug release list shop
  tug release list shop -o name`,
		Args: cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = args[0]
			if err := app.ValidateName(o.App); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runReleaseList(cmd.Context(), o)
		},
	}
	cli.AddOutputFlags(cmd, &o.Output)
	return cmd
}

func runReleaseList(ctx context.Context, o *releaseListOptions) error {
	s, err := o.Store()
	if err != nil {
		return err
	}
	a, err := s.GetApp(ctx, o.App)
	if err != nil {
		return err
	}
	rels, refused, err := s.ListReleasesAsViewer(ctx, a.Name)
	if err != nil {
		return err
	}
	// fewer releases than the history keeps, to a caller who reads no
	// Secret: the missing may be of the old form, not pruned
	if refused && len(rels) < min(a.LastRelease, app.HistoryLimit(a, rels, a.Release)) {
		fmt.Fprintf(o.IO.ErrOut, "note: releases stored before tug kept release records in ConfigMaps are one Secret each, which your access cannot read: %d of v1..v%d not listed (pruned, or of that form)\n", a.LastRelease-len(rels), a.LastRelease)
	}
	out := make([]app.ReleaseSummary, len(rels))
	for i, r := range rels {
		out[i] = app.SummarizeRelease(r)
		out[i].Traffic = app.TrafficShare(a, r.Version)
		out[i].Role = app.ReleaseRole(a, r.Version)
	}
	return o.Output.Print(o.IO, out, func() error {
		t := cli.NewTable("release", "kind", "status", "image", "author", "age", "message")
		for _, r := range out {
			mark := ""
			if r.Version == a.Release {
				mark = " *"
			}
			msg := r.Message
			if r.FailReason != "" {
				msg = r.FailReason
			}
			if o := r.PromotedFrom; o != nil && r.Kind == app.KindPromote && !strings.Contains(msg, o.String()) {
				msg = strings.TrimSuffix("promoted from "+o.String()+"; "+msg, "; ")
			}
			status := string(r.Status)
			if r.Traffic != nil {
				status += fmt.Sprintf(" (%d%%)", *r.Traffic)
			}
			switch r.Role {
			case app.RoleServing:
				status += ", serving: takes the requests until promote or abort"
			case app.RoleKept:
				status += ", kept: no requests; its processes other than web run it until promote"
			}
			if a.Canary.StepsHalted() && r.Version == a.Canary.Release {
				status += ", steps stopped: promote or abort"
			}
			t.AddRow(fmt.Sprintf("v%d%s", r.Version, mark), r.Kind, status, dash(r.Image), r.Author, text.Age(r.CreatedAt), msg)
		}
		return t.Render(o.IO, o.Output.NoHeaders)
	})
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
