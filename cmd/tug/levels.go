package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/doctor"
	"tug.dev/tug/pkg/kube"
)

// guardLevels makes every command that declares a namespace level
// (atLevel) keep it:
//
//   - a developer, operator or admin command asks, with its first client,
//     whether the caller holds the level (access.MayUse): one review; a
//     caller who holds a lower level of tug's is refused before anything
//     changes, unless other access lets them do what the level adds
//     (access.HoldsBeyond). A caller on no level of tug's (a hand-made Role, a
//     cluster-admin) goes on, and RBAC decides. RBAC alone cannot hold
//     the operator's line: a deploy rewrites an app's routes and record,
//     as 'tug domain add' does; and a refused exec stream does not come
//     back as a plain Forbidden.
//   - a refusal by RBAC (a viewer deploying) is explained: the level the
//     command needs, the caller's, and who can grant it.
//
// Called before routing wraps the commands, so routing picks the cluster
// first and the check asks that cluster.
func guardLevels(c *cobra.Command, f *cli.Factory) {
	for _, sub := range c.Commands() {
		guardLevels(sub, f)
	}
	need := access.Level(declaredLevel(c))
	if need.Rank() == 0 || c.RunE == nil {
		return
	}
	run := c.RunE
	c.RunE = func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		if need.Holds(access.Developer) {
			f.Gate = func(client kubernetes.Interface) error { return levelGate(ctx, f, client, cmd.CommandPath(), need) }
		}
		err := run(cmd, args)
		if err != nil && kube.IsRBACDenial(err) {
			if client, cerr := f.KubeClient(); cerr == nil {
				return explainDenial(ctx, f, client, cmd.CommandPath(), need, err)
			}
		}
		return err
	}
}

// levelGate refuses a caller who holds a level of tug's below need. An
// answer the cluster cannot give lets the command go on: RBAC still
// decides, and a refusal is explained then.
func levelGate(ctx context.Context, f *cli.Factory, client kubernetes.Interface, command string, need access.Level) error {
	ns, err := f.Namespace()
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if ok, err := access.MayUse(ctx, client, ns, need); err != nil || ok {
		return nil
	}
	have, err := access.CallerLevel(ctx, client, ns)
	if err != nil || have == "" {
		return nil
	}
	// Access beyond the tug level (a ClusterRole edit, a hand-made Role)
	// that RBAC lets do what need adds: RBAC decides, as for a caller on
	// no tug level.
	if beyond, err := access.HoldsBeyond(ctx, client, ns, need); err != nil || beyond {
		return nil
	}
	return &access.RefusedError{Command: command, Need: need, Have: have, User: kube.WhoAmI(ctx, client, ""), Namespace: ns}
}

// explainDenial turns RBAC's refusal of a command into what level it
// needs and how to get it; when the caller holds that level already, the
// Role lacks something and the API server's words are what helps.
func explainDenial(ctx context.Context, f *cli.Factory, client kubernetes.Interface, command string, need access.Level, denial error) error {
	ns, err := f.Namespace()
	if err != nil {
		return denial
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	have, err := access.CallerLevel(ctx, client, ns)
	if err != nil || have.Holds(need) {
		return denial
	}
	return &access.RefusedError{Command: command, Need: need, Have: have, User: kube.WhoAmI(ctx, client, ""), Namespace: ns, Err: denial}
}

// commandLevels are the declared levels of root's commands, by path.
func commandLevels(root *cobra.Command) map[string]string {
	out := map[string]string{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if l := declaredLevel(c); l != "" {
			out[c.CommandPath()] = l
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return out
}

// levelCheck is doctor's "access level" line: the caller's level in the
// namespace and the commands it cannot run, grouped by the level they
// need; it fills r.Level and r.CannotRun. false when the cluster did not
// answer (doctor's other checks say why).
func levelCheck(ctx context.Context, env doctor.Env, r *doctor.Report, levels map[string]string) (doctor.Check, bool) {
	client, err := env.KubeClient()
	if err != nil || r.Namespace == "" {
		return doctor.Check{}, false
	}
	have, err := access.CallerLevel(ctx, client, r.Namespace)
	if err != nil {
		return doctor.Check{Name: "access level", Status: doctor.StatusWarning, Message: "cannot tell your level: " + kube.TranslateError(err).Error()}, true
	}
	c := doctor.Check{Name: "access level", Status: doctor.StatusOK}
	if have == "" {
		c.Message = fmt.Sprintf("you hold none of tug's levels in namespace %q; your permissions, listed below, decide ('tug access list' shows who grants levels)", r.Namespace)
		return c, true
	}
	r.Level = string(have)
	byLevel := map[access.Level][]string{}
	for path, l := range levels {
		if need := access.Level(l); need.Rank() > 0 && !have.Holds(need) {
			byLevel[need] = append(byLevel[need], strings.TrimPrefix(path, "tug "))
			r.CannotRun = append(r.CannotRun, path)
		}
	}
	sort.Strings(r.CannotRun)
	c.Message = fmt.Sprintf("you are %s in namespace %q", access.Article(have), r.Namespace)
	var parts []string
	for _, l := range access.Levels {
		if cmds := byLevel[l]; len(cmds) > 0 {
			sort.Strings(cmds)
			parts = append(parts, fmt.Sprintf("%s commands (%s)", l, strings.Join(cmds, ", ")))
		}
	}
	if len(parts) > 0 {
		c.Message += "; you cannot run the " + strings.Join(parts, "; the ")
	}
	return c, true
}
