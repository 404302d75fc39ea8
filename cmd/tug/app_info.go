package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/text"
)

// appInfoOptions are `tug app info`.
type appInfoOptions struct {
	IO    *cli.IOStreams
	Store func() (*app.Store, error)

	App    string
	Output cli.OutputOptions
}

func newAppInfoCmd(f *cli.Factory, runF func(context.Context, *appInfoOptions) error) *cobra.Command {
	o := &appInfoOptions{IO: f.IOStreams, Store: storeFor(f)}
	cmd := &cobra.Command{
		Use:         "info APP",
		Annotations: atLevel(access.Viewer, argsAre(argApp)),
		Short:       "Show an app: processes and units, release, image, addresses, config",
		Example: `  tug app info shop
  tug app info shop -o json`,
		Args: cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = args[0]
			if err := app.ValidateName(o.App); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runAppInfo(cmd.Context(), o)
		},
	}
	cli.AddFormatFlag(cmd, &o.Output.Format)
	return cmd
}

func runAppInfo(ctx context.Context, o *appInfoOptions) error {
	s, err := o.Store()
	if err != nil {
		return err
	}
	usage := startAppUsage(ctx, s, o.App)
	defer usage.stop()
	info, err := app.GetInfo(ctx, s, o.App)
	if err != nil {
		return err
	}
	return o.Output.Print(o.IO, usage.with(info), func() error { return usage.print(o.IO, info, printAppInfo) })
}

func printAppInfo(ios *cli.IOStreams, in *app.Info) error {
	// The record's text (description, team, pool, a move's description,
	// addresses, a release's author and failure) is written by whoever can
	// write the app's namespace: the lines go out sanitized, as the table's
	// cells do.
	var b strings.Builder
	printAppRecord(&b, ios, in)
	printAppTraffic(&b, in)
	printAppState(&b, in)
	if _, err := io.WriteString(ios.Out, cli.Sanitize(b.String())); err != nil || len(in.Processes) == 0 {
		return err
	}
	return processTable(in.Processes).Render(ios, false)
}

// infoLine writes "Label:  value" when value is not empty, values aligned.
func infoLine(w io.Writer, label, value string) {
	if value != "" {
		fmt.Fprintf(w, "%-11s %s\n", label+":", value)
	}
}

// printAppRecord writes what the app is: its names, pool, move, release,
// image, what runs, build settings and config.
func printAppRecord(w io.Writer, ios *cli.IOStreams, in *app.Info) {
	infoLine(w, "App", in.Name)
	infoLine(w, "Namespace", in.Namespace)
	infoLine(w, "About", in.Description)
	infoLine(w, "Team", in.Team)
	infoLine(w, "Pool", in.Pool)
	if m := in.Move; m != nil {
		infoLine(w, "Move", fmt.Sprintf("%s; %s", m.Describe(), moveHint(in.Name, in.Pool, m)))
	}
	if r := in.Review; r != nil {
		infoLine(w, "Review", fmt.Sprintf("%s of %s, expires %s (%s)", r.Name, r.Of, r.ExpiresAt.Local().Format("2006-01-02 15:04"), expiresIn(r.ExpiresAt, time.Now())))
	}
	if p := in.Pipeline; p != nil {
		infoLine(w, "Pipeline", fmt.Sprintf("%s: %s", p.Name, strings.Join(p.Stages, " -> ")))
	}
	release := releaseCell(in.Release)
	if c := in.Canary; c != nil && c.Phase != app.CanaryEnding {
		release += releaseRoleNote(in, c)
	}
	infoLine(w, "Release", release)
	if c := in.Canary; c != nil {
		infoLine(w, "Canary", c.Describe()+fmt.Sprintf("; 'tug release promote %s' or 'tug release abort %s'", in.Name, in.Name))
	}
	image := in.Image
	if ios.IsStdoutTTY() {
		image = cli.ShortDigests(image) // as in the tables; whole with -o json or piped
	}
	infoLine(w, "Image", image)
	if r := in.Running; r != nil {
		vs := make([]string, len(r.Releases))
		for i, v := range r.Releases {
			vs[i] = fmt.Sprintf("v%d", v)
		}
		line := strings.Join(vs, ", ")
		if r.RollingOut {
			line += ", rolling out"
		}
		infoLine(w, "Running", fmt.Sprintf("%s (%s)", line, r.Note))
	}
	printBuildSettings(w, in.Build)
	built := builtWithLine(in.BuiltWith)
	if ios.IsStdoutTTY() {
		built = cli.ShortDigests(built)
	}
	infoLine(w, "Built with", built)
	infoLine(w, "Jobs", jobsLine(in.Jobs))
	infoLine(w, "Config", fmt.Sprintf("%d %s (values: tug env get %s --show-values)", in.ConfigKeys, text.Plural(in.ConfigKeys, "key", "keys"), in.Name))
}

// printAppTraffic writes how requests reach the app.
func printAppTraffic(w io.Writer, in *app.Info) {
	infoLine(w, "URLs", strings.Join(in.URLs, ", "))
	infoLine(w, "Addresses", strings.Join(in.Addresses, ", "))
	infoLine(w, "Domains", strings.Join(in.Domains, ", "))
	switch {
	case in.Maintenance:
		infoLine(w, "Traffic", "maintenance: requests get a 503 page (tug app maintenance APP off)")
	case !in.Routable:
		infoLine(w, "Traffic", "not routable: no requests reach the units (tug app routable APP on)")
	}
	infoLine(w, "Allowed", strings.Join(in.Allow, ", "))
}

// printAppState writes the last change and, when nothing runs, why.
func printAppState(w io.Writer, in *app.Info) {
	if lc := in.LastChange; lc != nil {
		line := fmt.Sprintf("v%d %s, %s by %s, %s ago", lc.Version, lc.Kind, lc.Status, lc.Author, text.Age(lc.CreatedAt))
		if lc.FailReason != "" {
			line += ": " + lc.FailReason
		}
		fmt.Fprintf(w, "Last change: %s\n", line)
	}
	switch {
	case len(in.Processes) == 0 && in.Failed != nil:
		fmt.Fprintf(w, "\nNo units: no release is deployed (v%d %s).\n", in.Failed.Version, in.Failed.Status)
	case len(in.Processes) == 0:
		fmt.Fprintln(w, "\nNo processes yet: deploy an image.")
	default:
		fmt.Fprintln(w)
	}
}

// processTable is the app's processes with their units.
func processTable(procs []app.ProcessSummary) *cli.Table {
	t := cli.NewTable("process", "units", "ready", "command")
	for _, p := range procs {
		cmd := p.Command
		if cmd == "" {
			cmd = "(image default)"
		}
		units := fmt.Sprint(p.Desired)
		switch {
		case p.Stopped:
			units = fmt.Sprintf("stopped (%d when started)", p.Replicas)
		case p.Autoscale != nil:
			units = fmt.Sprintf("%d (autoscale %d-%d)", p.Desired, p.Autoscale.Min, p.Autoscale.Max)
		}
		t.AddRow(p.Name, units, fmt.Sprint(p.Ready), cmd)
	}
	return t
}

// moveHint says what settles an unfinished move, from the side of the copy
// whose mark m is (pool: the copy's own).
func moveHint(name, pool string, m *app.Move) string {
	finish := fmt.Sprintf("'tug app pool set %s %s' finishes it", name, m.Pool)
	switch {
	case m.Role == app.MoveTarget:
		return finish
	case m.Superseded:
		return fmt.Sprintf("%s; if no configured cluster holds the new copy any more, 'tug app pool set %s %s' makes this copy the app again", finish, name, pool)
	}
	return fmt.Sprintf("%s, 'tug app pool set %s %s' gives it up (removing the half-made copy; nothing restarts)", finish, name, pool)
}

// releaseRoleNote says, beside the deployed release, what it does while a
// canary or blue-green release runs: which takes the requests, and that the
// processes other than web stay on the deployed release until promote.
func releaseRoleNote(in *app.Info, c *app.CanaryInfo) string {
	others := "its processes other than web run it until promote"
	switch c.Serving {
	case c.Release:
		return fmt.Sprintf(" (kept: no requests, v%d takes them; %s)", c.Release, others)
	case in.Release:
		return fmt.Sprintf(" (takes every request; %s)", others)
	}
	return fmt.Sprintf(" (%d%% of requests, v%d %d%%; %s)", 100-c.Weight, c.Release, c.Weight, others)
}
