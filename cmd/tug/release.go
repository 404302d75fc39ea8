package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/deploy"
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
	cmd.AddCommand(newReleaseListCmd(f), newReleaseInfoCmd(f), newReleaseRollbackCmd(f), newReleasePromoteCmd(f), newReleaseAbortCmd(f))
	return cmd
}

func newReleaseListCmd(f *cli.Factory) *cobra.Command {
	o := &cli.OutputOptions{}
	cmd := &cobra.Command{
		Use:         "list APP",
		Annotations: argsAre(argApp),
		Aliases:     []string{"ls"},
		Short:       "List an app's releases, newest first",
		Example: `  tug release list shop
  tug release list shop -o name`,
		Args: cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, a, err := loadApp(cmd, f, args[0])
			if err != nil {
				return err
			}
			rels, err := s.ListReleases(cmd.Context(), a.Name)
			if err != nil {
				return err
			}
			out := make([]app.ReleaseSummary, len(rels))
			for i, r := range rels {
				out[i] = app.SummarizeRelease(r)
				out[i].Traffic = app.TrafficShare(a, r.Version)
			}
			return o.Print(f.IOStreams, out, func() error {
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
					status := string(r.Status)
					if r.Traffic != nil {
						status += fmt.Sprintf(" (%d%%)", *r.Traffic)
					}
					if a.Canary.StepsHalted() && r.Version == a.Canary.Release {
						status += ", steps stopped: promote or abort"
					}
					t.AddRow(fmt.Sprintf("v%d%s", r.Version, mark), r.Kind, status, dash(r.Image), r.Author, text.Age(r.CreatedAt), msg)
				}
				return t.Render(f.IOStreams, o.NoHeaders)
			})
		},
	}
	cli.AddOutputFlags(cmd, o)
	return cmd
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newReleaseInfoCmd(f *cli.Factory) *cobra.Command {
	o := &cli.OutputOptions{}
	cmd := &cobra.Command{
		Use:         "info APP vN",
		Annotations: argsAre(argApp, argRelease),
		Short:       "Show one release: image and digest, processes, config names, status",
		Example: `  tug release info shop v3
  tug release info shop v3 -o jsonpath='{.image}'`,
		Args: cli.ExactArgs("APP", "RELEASE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := app.ValidateName(args[0]); err != nil {
				return err
			}
			v, err := app.ParseVersion(args[1])
			if err != nil {
				return err
			}
			s, err := appStore(f)
			if err != nil {
				return err
			}
			if _, err := s.GetApp(cmd.Context(), args[0]); err != nil {
				return err
			}
			r, _, err := s.GetRelease(cmd.Context(), args[0], v)
			if err != nil {
				return err
			}
			out := struct {
				app.ReleaseSummary
				Commands map[string]string `json:"commands"`
				Rollout  app.RolloutView   `json:"rollout"`
				// RolloutChanges: the settings changes made in place
				RolloutChanges []app.RolloutChange `json:"rolloutChanges,omitempty"`
			}{app.SummarizeRelease(r), r.Processes, r.Rollout.View(), r.RolloutChanges}
			return o.Print(f.IOStreams, out, func() error {
				w := f.IOStreams.Out
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
					return t.Render(f.IOStreams, false)
				}
				return nil
			})
		},
	}
	cli.AddFormatFlag(cmd, &o.Format)
	return cmd
}

func newReleaseRollbackCmd(f *cli.Factory) *cobra.Command {
	r := &rolloutFlags{}
	var skipReleasePhase bool
	cmd := &cobra.Command{
		Use:         "rollback APP [vN]",
		Annotations: argsAre(argApp, argRelease),
		Short:       "Roll back to an earlier release's image and config",
		Long: `Roll back to an earlier release: a new release with that release's image,
process commands and config, rolled out and watched like a deploy. Without vN,
the release that ran before the current one.

A release deployed by tag records the digest its units ran once it rolled
out (see 'tug release info'); the rollback runs that digest, so a tag moved
since then does not change what runs. Images loaded onto nodes without a
registry cannot be pinned; a rollback runs the tag.

The restored release's release phase (its Procfile's release: command) runs
first, with its config, as on a deploy: when it exits non-zero nothing is
rolled back (exit code 17) and the current release keeps running. A rollback
does not undo what a release command did (a migration stays applied); when the
restored release's command must not run again, pass --skip-release-phase.

--dry-run asks the API server to validate the rollback release and its
objects, then lists what would change against what runs now (image,
commands, config names, never values, and the units that would restart)
and whether the release phase would run; it stores no release and takes no
lock.`,
		Example: `  tug release rollback shop
  tug release rollback shop v3
  tug release rollback shop v3 --dry-run`,
		Args: cli.Args("APP", "[vN]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := app.ValidateName(args[0]); err != nil {
				return err
			}
			target := 0
			if len(args) == 2 {
				v, err := app.ParseVersion(args[1])
				if err != nil {
					return err
				}
				target = v
			}
			if err := r.validate(); err != nil {
				return err
			}
			client, err := f.KubeClient()
			if err != nil {
				return err
			}
			ns, err := f.Namespace()
			if err != nil {
				return err
			}
			store := &app.Store{Client: client, Namespace: ns}
			opts := r.options()
			opts.SkipReleasePhase = skipReleasePhase
			opts.Rollback, opts.RollbackTo = true, target
			return roll(cmd.Context(), changerFor(cmd, f), args[0], deploy.RollbackChange(cmd.Context(), store, target), opts, r.Output, rollVerb{"rolled back", "rolling back"})
		},
	}
	r.add(cmd, true)
	r.addDryRun(cmd, "")
	cmd.Flags().BoolVar(&skipReleasePhase, "skip-release-phase", false, "Roll back without running the restored release's release: command")
	return cmd
}
