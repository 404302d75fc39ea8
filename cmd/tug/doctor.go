package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/doctor"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/progress"
)

// doctorOptions are `tug doctor`.
type doctorOptions struct {
	IO *cli.IOStreams
	// Env is what doctor checks (the Factory: its kubeconfig and clients).
	Env      doctor.Env
	Progress func() progress.Reporter

	Output cli.OutputOptions
	All    bool

	// Levels are the commands' declared access levels, by path.
	Levels map[string]string
}

func newDoctorCmd(f *cli.Factory, runF func(context.Context, *doctorOptions) error) *cobra.Command {
	o := &doctorOptions{IO: f.IOStreams, Env: f, Progress: f.Progress}
	cmd := &cobra.Command{
		Use:         "doctor",
		Annotations: atLevel(levelNone, nil),
		Short:       "Check the kubeconfig, the cluster and your permissions",
		Long: `Check that the kubeconfig loads, the cluster answers, its version is within
one minor version of tug's client, and that you hold every permission each
group of tug commands needs: in the namespace (-n, or the kubeconfig's),
across the cluster for the node and pool commands, and, for what node remove
does to apps (tug-cluster-admin-apps), in each namespace that holds tug's
Deployments (the namespace checked when they cannot be listed).

It then checks the Gateway that app routes attach to, as the cluster
settings name it for the namespace's apps (the cluster's, and each of their
pools'): that it exists, that its controller accepted and programmed it, that
a listener admits HTTPRoutes from the namespace (allowedRoutes) and serves
names under the apps domain, and that you may create, patch and delete
httproutes there. Without a Gateway in the settings, routes go through an
Ingress, and doctor says so.

It says your access level of tug's in the namespace (viewer, developer,
operator, admin: 'tug access') and the commands it does not let you run.

Each permission is asked of the API server with a SelfSubjectAccessReview, so
the answer is exact whatever authorizer the cluster uses. doctor exits 1 when
anything is missing and lists exactly what. The cluster admin commands (node,
pool, node-container) are shown as "not available to you" without failing,
as a developer with a namespace Role is not expected to hold them; --all
counts them too. When the cluster cannot answer a check, doctor says so.`,
		Example: `  tug doctor
  tug doctor -n staging
  tug doctor --all                # cluster admin commands count too
  tug doctor -o json | jq '.groups[] | select(.status != "ok")'`,
		Args:    cli.NoArgs,
		GroupID: "cluster",
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Levels = commandLevels(cmd.Root())
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runDoctor(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.All, "all", false, "Count missing cluster admin permissions (nodes, pools, node containers) as problems too")
	cli.AddOutputFlags(cmd, &o.Output)
	return cmd
}

func runDoctor(ctx context.Context, o *doctorOptions) error {
	report, err := doctor.Run(ctx, o.Env, doctor.Options{Progress: o.Progress(), All: o.All})
	if err != nil {
		return err
	}
	if c, ok := levelCheck(ctx, o.Env, report, o.Levels); ok {
		report.Checks = append(report.Checks, c)
	}
	if err := o.Output.Print(o.IO, report, func() error {
		return printDoctor(o.IO, report, o.Output.NoHeaders)
	}); err != nil {
		return err
	}
	return doctorError(report)
}

func printDoctor(ios *cli.IOStreams, r *doctor.Report, noHeaders bool) error {
	colors := ios.Colors()
	// Marks for people at a terminal; plain words for logs and scripts.
	mark := func(symbol string) string {
		if ios.IsStdoutTTY() {
			return symbol + " "
		}
		return ""
	}
	status := func(s doctor.Status) string {
		switch s {
		case doctor.StatusOK:
			return colors.Green(mark("✓") + "ok")
		case doctor.StatusWarning:
			return colors.Yellow(mark("!") + "warning")
		case doctor.StatusUnavailable:
			return mark("-") + "not available to you (cluster admin commands)"
		case doctor.StatusError:
			return colors.Red(mark("?") + "could not check")
		default:
			return colors.Red(mark("✗") + "failed")
		}
	}
	checks := cli.NewTable("check", "status", "detail")
	for _, c := range r.Checks {
		checks.AddRow(c.Name, status(c.Status), c.Message)
	}
	if err := checks.Render(ios, noHeaders); err != nil {
		return err
	}
	if len(r.Groups) == 0 {
		return nil
	}
	fmt.Fprintln(ios.Out)
	groups := cli.NewTable("commands", "status", "missing")
	for _, g := range r.Groups {
		var missing []string
		if g.Status == doctor.StatusUnavailable {
			groups.AddRow(g.Name, status(g.Status), "")
			continue
		}
		if len(g.Missing) > 0 {
			missing = append(missing, doctor.MissingSummary(g.Missing))
		}
		if len(g.Errors) > 0 {
			missing = append(missing, "cannot check: "+strings.Join(g.Errors, "; "))
		}
		groups.AddRow(g.Name, status(g.Status), strings.Join(missing, "; "))
	}
	return groups.Render(ios, noHeaders)
}

// doctorError is the one-line summary that makes doctor exit 1.
func doctorError(r *doctor.Report) error {
	if r.OK {
		return nil
	}
	for _, c := range r.Checks {
		if c.Status == doctor.StatusFailed {
			return fmt.Errorf("%s", c.Message)
		}
	}
	var names, unchecked []string
	for _, g := range r.Groups {
		switch g.Status {
		case doctor.StatusFailed:
			names = append(names, g.Name)
		case doctor.StatusError:
			unchecked = append(unchecked, g.Name)
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("the cluster could not answer doctor's permission checks for %s (see the table); this says nothing about your permissions", strings.Join(unchecked, ", "))
	}
	msg := fmt.Sprintf("missing permissions for %s; ask a cluster admin (docs/rbac has the roles to grant)", strings.Join(names, ", "))
	if ns := appNamespacesMissing(r); len(ns) > 0 {
		cmds := make([]string, len(ns))
		for i, n := range ns {
			cmds[i] = kube.BindAppsRoleCommand(r.User, n)
		}
		msg += fmt.Sprintf("; in the app namespaces, bind the %s ClusterRole: %s", kube.ClusterAdminAppsRole, strings.Join(cmds, " && "))
	}
	return errors.New(msg)
}

// appNamespacesMissing are the app namespaces where a failed group lacks
// an app-namespaces permission.
func appNamespacesMissing(r *doctor.Report) []string {
	seen := map[string]bool{}
	var out []string
	for _, g := range r.Groups {
		if g.Status != doctor.StatusFailed {
			continue
		}
		for _, p := range g.Missing {
			if p.Scope == doctor.ScopeAppNamespaces && !seen[p.Namespace] {
				seen[p.Namespace] = true
				out = append(out, p.Namespace)
			}
		}
	}
	sort.Strings(out)
	return out
}
