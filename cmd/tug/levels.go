package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/kube"
)

// guardLevels makes every command that declares a namespace level
// (atLevel) keep it:
//
//   - a developer, operator or admin command asks, with its first client,
//     whether the caller holds the level (access.MayUse): one review; a
//     caller who holds a lower level of tug's is refused before anything
//     changes. A caller on no level of tug's (a hand-made Role, a
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
