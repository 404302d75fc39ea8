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

// releaseInfoOptions are `tug release info`.
type releaseInfoOptions struct {
	IO    *cli.IOStreams
	Store func() (*app.Store, error)

	App     string
	Version int
	Output  cli.OutputOptions
}

func newReleaseInfoCmd(f *cli.Factory, runF func(context.Context, *releaseInfoOptions) error) *cobra.Command {
	o := &releaseInfoOptions{IO: f.IOStreams, Store: storeFor(f)}
	cmd := &cobra.Command{
		Use:         "info APP vN",
		Annotations: atLevel(access.Viewer, argsAre(argApp, argRelease)),
		Short:       "Show one release: image and digest, processes, config names, status",
		Example: `  tug release info shop v3
  tug release info shop v3 -o jsonpath='{.image}'`,
		Args: cli.ExactArgs("APP", "RELEASE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = args[0]
			if err := app.ValidateName(o.App); err != nil {
				return err
			}
			v, err := app.ParseVersion(args[1])
			if err != nil {
				return err
			}
			o.Version = v
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runReleaseInfo(cmd.Context(), o)
		},
	}
	cli.AddFormatFlag(cmd, &o.Output.Format)
	return cmd
}

func runReleaseInfo(ctx context.Context, o *releaseInfoOptions) error {
	s, err := o.Store()
	if err != nil {
		return err
	}
	if _, err := s.GetApp(ctx, o.App); err != nil {
		return err
	}
	// the record alone: a viewer reads it, and it names the config's keys only
	r, err := s.GetReleaseRecord(ctx, o.App, o.Version)
	if err != nil {
		return err
	}
	out := releaseInfo{app.SummarizeRelease(r), r.Processes, r.Rollout.View(), r.RolloutChanges}
	return o.Output.Print(o.IO, out, func() error { return writeReleaseInfo(o.IO, r, out) })
}

// releaseInfo is release info's -o json|yaml shape (docs/output.md).
type releaseInfo struct {
	app.ReleaseSummary
	Commands map[string]string `json:"commands"`
	Rollout  app.RolloutView   `json:"rollout"`
	// RolloutChanges: the settings changes made in place
	RolloutChanges []app.RolloutChange `json:"rolloutChanges,omitempty"`
}

// writeReleaseInfo is release info for a person: the record's fields one a
// line, then its processes' commands as a table.
func writeReleaseInfo(ios *cli.IOStreams, r *app.Release, out releaseInfo) error {
	w := ios.Out
	fmt.Fprintf(w, "Release:  v%d (%s)\n", r.Version, r.Kind)
	fmt.Fprintf(w, "Status:   %s\n", r.Status)
	if r.FailReason != "" {
		fmt.Fprintf(w, "Failure:  %s\n", cli.Sanitize(r.FailReason))
	}
	fmt.Fprintf(w, "Image:    %s\n", dash(r.Image))
	if d := r.ImageDigest(); d != "" {
		// what its units ran, and what a rollback to it runs
		fmt.Fprintf(w, "Digest:   %s\n", d)
	}
	if o := r.PromotedFrom; o != nil {
		fmt.Fprintf(w, "Promoted: from %s (%s)\n", cli.Sanitize(o.String()), o.Digest)
	}
	fmt.Fprintf(w, "Author:   %s\n", cli.Sanitize(r.Author))
	fmt.Fprintf(w, "Created:  %s (%s ago)\n", r.CreatedAt.Local().Format("2006-01-02 15:04:05"), text.Age(r.CreatedAt))
	if r.Message != "" {
		fmt.Fprintf(w, "Message:  %s\n", cli.Sanitize(r.Message))
	}
	fmt.Fprintf(w, "Config:   %s\n", dash(strings.Join(r.ConfigKeys, ", ")))
	fmt.Fprintf(w, "Rollout:  %s\n", out.Rollout)
	for _, c := range r.RolloutChanges {
		// changed in place: the units did not restart
		fmt.Fprintf(w, "Changed:  %s (%s ago) by %s: %s\n", c.At.Local().Format("2006-01-02 15:04:05"), text.Age(c.At),
			dash(cli.Sanitize(c.Author)), cli.Sanitize(c.Message))
	}
	if len(r.Processes) > 0 {
		fmt.Fprintln(w)
		t := cli.NewTable("process", "command")
		for _, p := range out.Processes {
			c := r.Processes[p]
			if c == "" {
				c = "(image default)"
			}
			t.AddRow(p, c)
		}
		return t.Render(ios, false)
	}
	return nil
}
