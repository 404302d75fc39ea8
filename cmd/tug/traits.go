package main

import (
	"strings"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
)

// What a command is, declared where it is defined (its Annotations) and
// read by the code that routes it (route.go), guards it and completes its
// arguments (completion.go): never guessed from its Use line or its name,
// so rewording help changes nothing else. TestCommandsDeclareTheirArguments
// checks the declarations against the help.

const (
	// annotationArgs lists what each positional argument names, in order
	// (argKind values, space-separated).
	annotationArgs = "tug.dev/args"
	// annotationDeletes marks a command that deletes something of an app:
	// routing refuses it while a configured cluster does not answer
	// (silentClusterError).
	annotationDeletes = "tug.dev/deletes"
	// annotationLevel is the access level a command needs in the
	// namespace (pkg/access: viewer, developer, operator, admin), or
	// levelNone / levelClusterAdmin. The levels' Roles, the refusal of a
	// command to a lower level (levels.go), doctor's "cannot run" and
	// docs/access.md follow it; TestEveryCommandDeclaresALevel requires it.
	annotationLevel = access.AnnotationLevel
)

// Levels that are not a namespace's: levelNone needs nothing of a
// namespace (local files, the kubeconfig, what every user may read);
// levelClusterAdmin needs docs/rbac's cluster roles (nodes, pools, node
// containers, cluster settings).
const (
	levelNone         = "none"
	levelClusterAdmin = "cluster-admin"
)

// argKind is what one positional argument names.
type argKind string

const (
	// argApp is an existing app: the command goes to the cluster that
	// holds it (routeAppCommands) and completes app names.
	argApp argKind = "app"
	// argNewName names something the command makes: nothing to complete.
	argNewName argKind = "new-name"
	argUnit    argKind = "unit"
	// argRelease is an app's release, vN.
	argRelease       argKind = "release"
	argNode          argKind = "node"
	argPool          argKind = "pool"
	argVolume        argKind = "volume"
	argService       argKind = "service"
	argCluster       argKind = "cluster"
	argNodeContainer argKind = "node-container"
	argHost          argKind = "host"
	argJob           argKind = "job"
	argPipeline      argKind = "pipeline"
	// argStage is a pipeline's stage: NAMESPACE/APP, or a namespace.
	argStage   argKind = "stage"
	argKey     argKind = "key"
	argAddress argKind = "address"
	argCount   argKind = "count"
	argOnOff   argKind = "on|off"
	argShell   argKind = "shell"
	argDir     argKind = "dir"
	// argSubject is who access is for: NAME, group:NAME, ci:NAME, ...
	argSubject argKind = "subject"
	// argCommandLine is the rest of the line, after "--": a command to
	// run, whose arguments may be files.
	argCommandLine argKind = "command-line"
)

// argsAre is the Annotations of a command whose positional arguments are
// kinds, in order.
func argsAre(kinds ...argKind) map[string]string {
	words := make([]string, len(kinds))
	for i, k := range kinds {
		words[i] = string(k)
	}
	return map[string]string{annotationArgs: strings.Join(words, " ")}
}

// deleting is argsAre for a command that deletes something of an app.
func deleting(kinds ...argKind) map[string]string {
	a := argsAre(kinds...)
	a[annotationDeletes] = "true"
	return a
}

// atLevel declares the access level c needs (access.Level, levelNone or
// levelClusterAdmin) on top of annotations a (argsAre, deleting; nil for
// none).
func atLevel[L ~string](l L, a map[string]string) map[string]string {
	if a == nil {
		a = map[string]string{}
	}
	a[annotationLevel] = string(l)
	return a
}

// declaredLevel is what c declares with atLevel ("" for nothing).
func declaredLevel(c *cobra.Command) string { return c.Annotations[annotationLevel] }

// argKinds are the kinds c declares for its positional arguments.
func argKinds(c *cobra.Command) []argKind {
	var out []argKind
	for _, w := range strings.Fields(c.Annotations[annotationArgs]) {
		out = append(out, argKind(w))
	}
	return out
}

// takesApp reports whether c's first argument is an app's name.
func takesApp(c *cobra.Command) bool {
	k := argKinds(c)
	return len(k) > 0 && k[0] == argApp
}

// deletes reports whether c deletes something of an app.
func deletes(c *cobra.Command) bool { return c.Annotations[annotationDeletes] == "true" }

// passesCommandLine reports whether c runs a command line given after "--".
func passesCommandLine(c *cobra.Command) bool {
	k := argKinds(c)
	return len(k) > 0 && k[len(k)-1] == argCommandLine
}
