// Command pack writes a root filesystem (a folder, e.g. one debootstrap
// made) as an OCI image-layout tar with one layer, which `ctr images
// import` loads and test/cluster/registry pushes, like test/images/build's.
//
//	pack -rootfs DIR -ref NAME:TAG -out FILE.tar [-user UID:GID] [-workdir DIR]
//	     [-env K=V]... [-entrypoint ARG]... [-cmd ARG]... [-label K=V]...
//	     [-stop-signal SIG]
//
// test/images/services/build.sh uses it for the postgres and redis images.
// The layer is streamed through a file next to the output, so a root
// filesystem of hundreds of megabytes never sits in memory.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"tug.dev/tug/test/images/layer"
)

// list is a flag given once per value.
type list []string

func (l *list) String() string     { return strings.Join(*l, " ") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	var env, entrypoint, cmd, labels list
	rootfs := flag.String("rootfs", "", "the root filesystem to pack")
	ref := flag.String("ref", "", "the image's name, e.g. localhost/tug/postgres:15")
	out := flag.String("out", "", "the OCI image-layout tar to write")
	tag := layer.Tag{}
	flag.StringVar(&tag.User, "user", "", "the user the image runs as (UID:GID)")
	flag.StringVar(&tag.WorkingDir, "workdir", "", "the working directory (default /)")
	flag.StringVar(&tag.StopSignal, "stop-signal", "", "the signal that stops the container (default SIGTERM)")
	flag.Var(&env, "env", "an environment variable K=V (repeat)")
	flag.Var(&entrypoint, "entrypoint", "an argument of the entrypoint (repeat)")
	flag.Var(&cmd, "cmd", "an argument of the command (repeat)")
	flag.Var(&labels, "label", "a label K=V (repeat)")
	flag.Parse()
	if *rootfs == "" || *ref == "" || *out == "" || !strings.Contains(*ref, ":") {
		fmt.Fprintln(os.Stderr, "usage: pack -rootfs DIR -ref NAME:TAG -out FILE.tar [flags]")
		os.Exit(2)
	}
	tag.Ref, tag.Env, tag.Entrypoint, tag.Cmd = *ref, env, entrypoint, cmd
	if len(labels) > 0 {
		tag.Labels = map[string]string{}
		for _, l := range labels {
			k, v, ok := strings.Cut(l, "=")
			if !ok {
				fmt.Fprintf(os.Stderr, "pack: -label %q: want K=V\n", l)
				os.Exit(2)
			}
			tag.Labels[k] = v
		}
	}
	if err := pack(*rootfs, *out, tag); err != nil {
		fmt.Fprintln(os.Stderr, "pack:", err)
		os.Exit(1)
	}
}

func pack(rootfs, out string, tag layer.Tag) error {
	tmp, err := os.CreateTemp(filepath.Dir(out), ".layer-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := layer.DirTar(tmp, rootfs); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: %w", rootfs, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return layer.WriteLayout(out, tmp.Name(), []layer.Tag{tag})
}
