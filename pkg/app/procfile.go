package app

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// ParseProcfile reads a Heroku-style Procfile: "type: command" per line,
// blank lines and # comments ignored.
func ParseProcfile(r io.Reader) (map[string]string, error) {
	procs := map[string]string{}
	sc := bufio.NewScanner(r)
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
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(procs) == 0 {
		return nil, fmt.Errorf("the Procfile declares no process types")
	}
	return procs, nil
}

// ParseProcessFlags reads --process values: "web=cmd args" each.
func ParseProcessFlags(values []string) (map[string]string, error) {
	procs := map[string]string{}
	for _, v := range values {
		name, cmd, ok := strings.Cut(v, "=")
		if !ok {
			return nil, fmt.Errorf("--process %q: want TYPE='command args'", v)
		}
		if err := addProcess(procs, name, strings.TrimSpace(cmd)); err != nil {
			return nil, fmt.Errorf("--process %q: %w", v, err)
		}
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
		return fmt.Errorf("invalid config name %q: use letters, digits and '_', not starting with a digit", name)
	}
	return nil
}

// ParseEnvFile reads KEY=VALUE lines (blank lines, # comments and an
// "export " prefix allowed; values may be quoted).
func ParseEnvFile(r io.Reader) (ConfigMap, error) {
	cfg := ConfigMap{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
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
	return cfg, sc.Err()
}
