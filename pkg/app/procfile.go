package app

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/text"
)

// ParseProcfile reads a Heroku-style Procfile: "type: command" per line,
// blank lines and # comments ignored.
func ParseProcfile(r io.Reader) (map[string]string, error) {
	procs := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), MaxProcfileLine)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, cmd, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("line %d: want \"type: command\", got %q", n, line)
		}
		if err := addProcess(procs, strings.TrimSpace(name), strings.TrimSpace(cmd)); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
	}
	if err := scanErr(sc, n, MaxProcfileLine); err != nil {
		return nil, err
	}
	if len(procs) == 0 {
		return nil, fmt.Errorf("the Procfile declares no process types")
	}
	return procs, nil
}

// ParseProcessFlags reads --process values: "web=cmd args" each; "web="
// runs the image's own command as web. Its errors are input errors.
func ParseProcessFlags(values []string) (map[string]string, error) {
	procs := map[string]string{}
	for _, v := range values {
		name, cmd, ok := strings.Cut(v, "=")
		if !ok {
			return nil, inputerr.Errorf("--process %q: want TYPE='command args' (TYPE= for the image's own command)", v)
		}
		if err := ValidateProcessName(name); err != nil {
			return nil, inputerr.Errorf("--process %q: %w", v, err)
		}
		if _, dup := procs[name]; dup {
			return nil, inputerr.Errorf("--process %q: process %q is declared twice", v, name)
		}
		procs[name] = strings.TrimSpace(cmd)
	}
	return procs, nil
}

func addProcess(procs map[string]string, name, cmd string) error {
	if err := ValidateProcessName(name); err != nil {
		return err
	}
	if _, dup := procs[name]; dup {
		return fmt.Errorf("process %q is declared twice", name)
	}
	if cmd == "" {
		return fmt.Errorf("process %q has no command", name)
	}
	procs[name] = cmd
	return nil
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ValidateEnvName checks a config variable name: letters, digits and '_',
// not starting with a digit, as every shell accepts.
func ValidateEnvName(name string) error {
	if !envNameRE.MatchString(name) {
		return inputerr.Errorf("invalid config name %q: use letters, digits and '_', not starting with a digit", name)
	}
	return checkNotPlatform(name)
}

// ParseEnvFile reads KEY=VALUE lines (blank lines, # comments and an
// "export " prefix allowed; values may be quoted).
func ParseEnvFile(r io.Reader) (ConfigMap, error) {
	cfg := ConfigMap{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), MaxConfigBytes)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("line %d: want KEY=VALUE", n)
		}
		k = strings.TrimSpace(k)
		if err := ValidateEnvName(k); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		cfg[k] = v
	}
	if err := scanErr(sc, n, MaxConfigBytes); err != nil {
		return nil, err
	}
	return cfg, nil
}

// scanErr is a line scanner's error, saying which line is too long: n
// lines were read before it.
func scanErr(sc *bufio.Scanner, n int, maxLine int64) error {
	err := sc.Err()
	if errors.Is(err, bufio.ErrTooLong) {
		return fmt.Errorf("line %d is longer than %s, the limit for one line", n+1, text.Size(maxLine))
	}
	return err
}

// ProcessSource says where a deploy's process types come from: --process
// flags (each adds or changes one type; the others carry over), else a
// Procfile (--procfile, or ./Procfile when there is one: the whole list),
// else nothing (the types carry over; the first deploy runs the image's own
// command as web). --remove-process drops types by name.
type ProcessSource struct {
	Flags    []string // --process TYPE='command' values
	Remove   []string // --remove-process TYPE values
	Procfile string   // --procfile; "" looks for Procfile in Dir
	Dir      string   // where the default Procfile is looked for; "" is the current directory
}

// Validate checks that the sources do not contradict each other.
func (s ProcessSource) Validate() error {
	if len(s.Flags) > 0 && s.Procfile != "" {
		return inputerr.Errorf("--process and --procfile cannot be used together")
	}
	seen := map[string]bool{}
	for _, name := range s.Remove {
		if err := ValidateProcessName(name); err != nil {
			return inputerr.Errorf("--remove-process %q: %w", name, err)
		}
		if seen[name] {
			return inputerr.Errorf("--remove-process %s is given twice", name)
		}
		seen[name] = true
	}
	return nil
}

// ReleasePhase is the Procfile entry of the release-phase command.
const ReleasePhase = "release"

// Resolve returns what the deploy says of the process types, the
// release-phase command, and warnings for what it skipped. Heroku's
// "release:" entry is a release-phase command, not a process: it runs once
// per deploy, in a one-off unit of the new release, before any process
// rolls out (it would run forever as a process and "crash" when it exits
// 0). Every error is an input error.
func (s ProcessSource) Resolve() (change ProcessChange, release string, warnings []string, err error) {
	if err := s.Validate(); err != nil {
		return ProcessChange{}, "", nil, err
	}
	change.Remove = s.Remove
	if len(s.Flags) > 0 {
		change.Set, err = ParseProcessFlags(s.Flags)
		change.From = "--process"
		return change, "", nil, err
	}
	path, file := s.Procfile, s.Procfile
	if path == "" {
		path, file = "./Procfile", filepath.Join(s.Dir, "Procfile")
		if _, err := os.Stat(file); err != nil {
			return change, "", nil, nil
		}
	}
	b, err := ReadFileArgLimit("--procfile", file, MaxProcfileBytes)
	if err != nil {
		return ProcessChange{}, "", nil, err
	}
	procs, err := ParseProcfile(bytes.NewReader(b))
	if err != nil {
		return ProcessChange{}, "", nil, inputerr.Errorf("%s: %w", path, err)
	}
	// build: is the build step of a deploy from source (docs/builders.md),
	// run by the build agent, never a process.
	delete(procs, "build")
	if len(procs) == 0 {
		return ProcessChange{}, "", nil, inputerr.Errorf("%s declares only a build step; add a process such as web", path)
	}
	if cmd, ok := procs[ReleasePhase]; ok {
		delete(procs, ReleasePhase)
		release = cmd
		if strings.TrimSpace(cmd) == "" {
			return ProcessChange{}, "", nil, inputerr.Errorf("%s: the release-phase command is empty", path)
		}
		if len(procs) == 0 {
			return ProcessChange{}, "", nil, inputerr.Errorf("%s declares only a release-phase command; add a process such as web", path)
		}
	}
	change.Set, change.Complete, change.From = procs, true, "Procfile "+path
	return change, release, warnings, nil
}

// ValidateImage checks --image: given, and with no spaces.
func ValidateImage(image string) error {
	if strings.TrimSpace(image) == "" {
		return inputerr.Errorf("--image is required: the image to deploy")
	}
	if strings.ContainsAny(image, " \t\n") {
		return inputerr.Errorf("invalid --image %q: an image reference has no spaces", image)
	}
	// The kubelet refuses a repository with capitals (InvalidImageName):
	// say so before a release is made, not as a failed rollout.
	name, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name = name[:i]
	}
	path := name
	if host, p, ok := strings.Cut(name, "/"); ok && (strings.ContainsAny(host, ".:") || host == "localhost") {
		path = p
	}
	if path != strings.ToLower(path) {
		return inputerr.Errorf("invalid --image %q: the repository %q must be lower case (only a registry host and a tag may have capitals)", image, path)
	}
	return nil
}
