package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/service"
)

// serviceInfoOptions are `tug service info`.
type serviceInfoOptions struct {
	IO     *cli.IOStreams
	Deps   func(context.Context) (service.Deps, error)
	Name   string
	Output cli.OutputOptions
}

func newServiceInfoCmd(f *cli.Factory, runF func(context.Context, *serviceInfoOptions) error) *cobra.Command {
	o := &serviceInfoOptions{IO: f.IOStreams, Deps: serviceDepsFor(f)}
	cmd := &cobra.Command{
		Use:         "info NAME",
		Annotations: atLevel(access.Viewer, argsAre(argService)),
		Short:       "Show a service: plan, version, status, volume, bound apps and the names they see",
		Long: `Show a service: its plan and version, whether it accepts connections (and why
not), its volume, where apps reach it, and each bound app with the variables
and files it sees. Never a secret value: see 'tug service credentials'.`,
		Example: "  tug service info db\n  tug service info db -o json",
		Args:    cli.ExactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			if err := service.ValidateName(o.Name); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runServiceInfo(cmd.Context(), o)
		},
	}
	cli.AddFormatFlag(cmd, &o.Output.Format)
	return cmd
}

func runServiceInfo(ctx context.Context, o *serviceInfoOptions) error {
	d, err := o.Deps(ctx)
	if err != nil {
		return err
	}
	i, err := service.Get(ctx, d, o.Name)
	if err != nil {
		return err
	}
	return o.Output.Print(o.IO, i, func() error {
		w := o.IO.Out
		fmt.Fprintf(w, "Service:  %s\nPlan:     %s %s\n", i.Name, i.Plan, i.Version)
		status := i.Status
		if i.Reason != "" {
			status += " (" + cli.Sanitize(i.Reason) + ")"
		}
		fmt.Fprintf(w, "Status:   %s\n", status)
		if i.Image != "" {
			fmt.Fprintf(w, "Image:    %s\n", i.Image)
		}
		if i.Volume != "" {
			used := ""
			if i.Status == "ready" && i.Used == "" {
				used = ", use unknown"
			}
			if i.Used != "" {
				used = ", " + i.Used + " used"
			}
			fmt.Fprintf(w, "Volume:   %s, %s asked, %s%s\n", i.Volume, i.Size, orWord(i.Capacity, "not bound yet"), used)
		}
		if i.Host != "" {
			fmt.Fprintf(w, "Address:  %s:%d\n", i.Host, i.Port)
		}
		fmt.Fprintf(w, "Secrets:  %s (credentials), %s (binding, %s: %s)\n", i.CredentialsSecret, i.BindingSecret, i.Binding.Type, strings.Join(i.Binding.Keys, ", "))
		if len(i.Apps) == 0 {
			fmt.Fprintln(w, "Apps:     none bound")
			return nil
		}
		fmt.Fprintln(w, "Apps:")
		for _, a := range i.Apps {
			vars := strings.Join(a.Variables, ", ")
			if a.Variables == nil {
				vars = "variables not shown (the release is a Secret, read from developer up)"
			}
			fmt.Fprintf(w, "  %s: %s; files in %s\n", a.App, vars, a.Files)
		}
		return nil
	})
}

func orWord(s, word string) string {
	if s == "" {
		return word
	}
	return s
}
