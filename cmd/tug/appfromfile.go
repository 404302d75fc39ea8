package main

import (
	"fmt"
	"os"
	"regexp"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/manifest"
)

// appFromManifest lets every command whose first argument is an app leave
// it out in an app's folder: the app (and its namespace and kubeconfig
// context, unless -n or --context say) come from the tug.yaml of the
// current folder or the nearest one above it, and stderr says so ("app
// shop from ./tug.yaml"). An app given on the command line is used as
// given. Commands that delete (app remove, domain remove, ...) are left
// alone: they always need the app typed. It wraps the commands' Args and
// RunE, outside routing, so routing and the command see the app as if it
// had been typed.
func appFromManifest(root *cobra.Command, f *cli.Factory) {
	for _, c := range root.Commands() {
		appFromManifest(c, f)
	}
	// a command that deletes something of an app names the app itself:
	// a folder's tug.yaml (and the context it names) is no ground to
	// delete with, least of all with --yes
	if !takesApp(root) || deletes(root) || root.RunE == nil || root.Args == nil {
		return
	}
	args, run := root.Args, root.RunE
	kinds := argKinds(root)
	from := &appFile{f: f}
	root.Args = func(cmd *cobra.Command, a []string) error {
		if full, ok := from.fill(cmd, kinds, a); ok {
			return args(cmd, full)
		}
		if err := args(cmd, a); err != nil {
			if from.err != nil {
				return from.err // a tug.yaml that does not parse: why the app is missing
			}
			return err
		}
		return nil
	}
	root.RunE = func(cmd *cobra.Command, a []string) error {
		if full, ok := from.fill(cmd, kinds, a); ok {
			if err := from.apply(cmd); err != nil {
				return err
			}
			a = full
		}
		return run(cmd, a)
	}
}

// appFile is the tug.yaml one command may take its app from, read once.
type appFile struct {
	f    *cli.Factory
	read bool
	m    *manifest.Manifest
	err  error
	said bool
}

var releaseWord = regexp.MustCompile(`^v[0-9]+$`)

// fill is a with the file's app put first, when a lacks the app: no
// argument, only arguments after "--", or a first one that cannot be an
// app (DATABASE_URL, web=2, v3 where a release follows the app).
func (p *appFile) fill(cmd *cobra.Command, kinds []argKind, a []string) ([]string, bool) {
	missing := len(a) == 0 || cmd.ArgsLenAtDash() == 0 || app.ValidateName(a[0]) != nil ||
		(len(kinds) > 1 && kinds[1] == argRelease && len(a) < len(kinds) && releaseWord.MatchString(a[0]))
	if !missing {
		return nil, false
	}
	m := p.manifest()
	if m == nil || m.App == "" {
		return nil, false
	}
	return append([]string{m.App}, a...), true
}

func (p *appFile) manifest() *manifest.Manifest {
	if !p.read {
		p.read = true
		if dir, err := os.Getwd(); err == nil {
			p.m, p.err = manifest.FindUp(dir)
		}
	}
	return p.m
}

// apply takes the file's namespace and context where no flag gave them,
// and says on stderr where the app came from.
func (p *appFile) apply(cmd *cobra.Command) error {
	if p.err != nil {
		return p.err
	}
	m := p.m
	where := ""
	if m.Namespace != "" && !flagChanged(cmd, "namespace") {
		p.f.ConfigFlags.Namespace = m.Namespace
		where += " in namespace " + m.Namespace
	}
	if m.Context != "" && !flagChanged(cmd, "context") {
		p.f.ConfigFlags.Context = m.Context
		where += " of context " + m.Context
	}
	if !p.said {
		p.said = true
		fmt.Fprintf(p.f.IOStreams.ErrOut, "app %s%s from %s\n", m.App, where, m.Path)
	}
	return nil
}

func flagChanged(cmd *cobra.Command, name string) bool {
	fl := cmd.Flags().Lookup(name)
	return fl != nil && fl.Changed
}
