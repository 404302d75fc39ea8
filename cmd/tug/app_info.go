package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/text"
)

func newAppInfoCmd(f *cli.Factory) *cobra.Command {
	o := &cli.OutputOptions{}
	cmd := &cobra.Command{
		Use:   "info APP",
		Short: "Show an app: processes and units, release, image, addresses, config",
		Example: `  tug app info shop
  tug app info shop -o json`,
		Args: cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := app.ValidateName(args[0]); err != nil {
				return err
			}
			s, err := appStore(f)
			if err != nil {
				return err
			}
			info, err := app.GetInfo(cmd.Context(), s, args[0])
			if err != nil {
				return err
			}
			return o.Print(f.IOStreams, info, func() error { return printAppInfo(f.IOStreams, info) })
		},
	}
	cli.AddFormatFlag(cmd, &o.Format)
	return cmd
}

func printAppInfo(ios *cli.IOStreams, in *app.Info) error {
	// The record's text (description, team, pool, a move's description,
	// addresses, a release's author and failure) is written by whoever can
	// write the app's namespace: the lines go out sanitized, as the table's
	// cells do.
	var b strings.Builder
	w := &b
	fmt.Fprintf(w, "App:        %s\n", in.Name)
	fmt.Fprintf(w, "Namespace:  %s\n", in.Namespace)
	if in.Description != "" {
		fmt.Fprintf(w, "About:      %s\n", in.Description)
	}
	if in.Team != "" {
		fmt.Fprintf(w, "Team:       %s\n", in.Team)
	}
	if in.Pool != "" {
		fmt.Fprintf(w, "Pool:       %s\n", in.Pool)
	}
	if m := in.Move; m != nil {
		fmt.Fprintf(w, "Move:       %s; %s\n", m.Describe(), moveHint(in.Name, in.Pool, m))
	}
	fmt.Fprintf(w, "Release:    %s\n", releaseCell(in.Release))
	if in.Image != "" {
		image := in.Image
		if ios.IsStdoutTTY() {
			image = cli.ShortDigests(image) // as in the tables; whole with -o json or piped
		}
		fmt.Fprintf(w, "Image:      %s\n", image)
	}
	if r := in.Running; r != nil {
		vs := make([]string, len(r.Releases))
		for i, v := range r.Releases {
			vs[i] = fmt.Sprintf("v%d", v)
		}
		line := strings.Join(vs, ", ")
		if r.RollingOut {
			line += ", rolling out"
		}
		fmt.Fprintf(w, "Running:    %s (%s)\n", line, r.Note)
	}
	printBuildSettings(w, in.Build)
	fmt.Fprintf(w, "Config:     %d %s (values: tug env get %s --show-values)\n", in.ConfigKeys, text.Plural(in.ConfigKeys, "key", "keys"), in.Name)
	if len(in.URLs) > 0 {
		fmt.Fprintf(w, "URLs:       %s\n", strings.Join(in.URLs, ", "))
	}
	if len(in.Addresses) > 0 {
		fmt.Fprintf(w, "Addresses:  %s\n", strings.Join(in.Addresses, ", "))
	}
	if len(in.Domains) > 0 {
		fmt.Fprintf(w, "Domains:    %s\n", strings.Join(in.Domains, ", "))
	}
	switch {
	case in.Maintenance:
		fmt.Fprintln(w, "Traffic:    maintenance: requests get a 503 page (tug app maintenance APP off)")
	case !in.Routable:
		fmt.Fprintln(w, "Traffic:    not routable: no requests reach the units (tug app routable APP on)")
	}
	if len(in.Allow) > 0 {
		fmt.Fprintf(w, "Allowed:    %s\n", strings.Join(in.Allow, ", "))
	}
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
	if _, err := io.WriteString(ios.Out, cli.Sanitize(b.String())); err != nil || len(in.Processes) == 0 {
		return err
	}
	t := cli.NewTable("process", "units", "ready", "command")
	for _, p := range in.Processes {
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
	return t.Render(ios, false)
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
