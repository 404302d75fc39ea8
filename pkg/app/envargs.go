package app

import (
	"bytes"
	"io"
	"maps"
	"strings"

	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/text"
)

// ParseEnvArgs reads `tug env set` input: KEY=VALUE arguments, where VALUE
// @FILE reads the value from a file and @- from stdin, and fromFile, an env
// file of KEY=VALUE lines ("-" for stdin) whose values the arguments
// override. Stdin is read at most once. Every name is checked before
// anything is sent, and every error is an input error. Each file or stream
// read, and all the config set, is at most MaxConfigBytes.
func ParseEnvArgs(args []string, fromFile string, stdin io.Reader) (ConfigMap, error) {
	in := &envInput{stdin: stdin}
	set := ConfigMap{}
	if fromFile != "" {
		cfg, err := in.envFile(fromFile)
		if err != nil {
			return nil, err
		}
		maps.Copy(set, cfg)
	}
	for _, arg := range args {
		k, v, err := in.arg(arg)
		if err != nil {
			return nil, err
		}
		set[k] = v
	}
	if err := checkEnvSet(set); err != nil {
		return nil, err
	}
	return set, nil
}

// envInput reads the files and the standard input env set's input names.
// Standard input can be read once only: a second "-" or "@-" would find
// it empty and silently set an empty value.
type envInput struct {
	stdin     io.Reader
	stdinUsed bool
}

// read reads standard input (what names it in an error) or else the file
// at path (fileWhat names it), each at most MaxConfigBytes.
func (in *envInput) read(fromStdin bool, what, fileWhat, path string) ([]byte, error) {
	if !fromStdin {
		return ReadFileArgLimit(fileWhat, path, MaxConfigBytes)
	}
	if in.stdinUsed {
		return nil, inputerr.Errorf("%s: standard input can be read only once", what)
	}
	in.stdinUsed = true
	return ReadLimited(in.stdin, what, MaxConfigBytes)
}

// envFile reads --from-env-file ("-": standard input).
func (in *envInput) envFile(fromFile string) (ConfigMap, error) {
	b, err := in.read(fromFile == "-", "--from-env-file -", "--from-env-file", fromFile)
	if err != nil {
		return nil, err
	}
	cfg, err := ParseEnvFile(bytes.NewReader(b))
	if err != nil {
		return nil, inputerr.Errorf("--from-env-file %s: %v", fromFile, err)
	}
	return cfg, nil
}

// arg reads one KEY=VALUE argument, its value read from a file for
// @FILE and from standard input for @-.
func (in *envInput) arg(arg string) (string, string, error) {
	k, v, ok := strings.Cut(arg, "=")
	if !ok {
		return "", "", inputerr.Errorf("%q is not KEY=VALUE; to remove a variable use 'tug env unset'", arg)
	}
	if err := ValidateEnvName(k); err != nil {
		return "", "", err
	}
	if !strings.HasPrefix(v, "@") {
		return k, v, nil
	}
	b, err := in.read(v == "@-", k+"=@-", k+"=@", v[1:])
	if err != nil {
		return "", "", err
	}
	// a file or pipe usually ends with one newline that is not part of the value
	return k, strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r"), nil
}

// checkEnvSet checks the config to set as a whole: something to set,
// the values tug reads itself valid (PORT a port number), and all of it
// within one Secret's limit.
func checkEnvSet(set ConfigMap) error {
	if len(set) == 0 {
		return inputerr.Errorf("nothing to set: give KEY=VALUE arguments or --from-env-file")
	}
	for _, k := range set.Keys() {
		if err := ValidateEnvValue(k, set[k]); err != nil {
			return err
		}
	}
	if n := set.Size(); n > MaxConfigBytes {
		return inputerr.Errorf("the config to set is %d bytes; the limit is %s (an app's config lives in one Secret)", n, text.Size(MaxConfigBytes))
	}
	return nil
}

// ValidateEnvUnset checks `tug env unset` names: names only, each valid.
func ValidateEnvUnset(keys []string) error {
	for _, k := range keys {
		if strings.Contains(k, "=") {
			return inputerr.Errorf("%q: unset takes names only, not KEY=VALUE", k)
		}
		if err := ValidateEnvName(k); err != nil {
			return err
		}
	}
	return nil
}

// Size is how many bytes the config takes in a Secret: names and values.
func (c ConfigMap) Size() int {
	n := 0
	for k, v := range c {
		n += len(k) + len(v)
	}
	return n
}

// Equal says two configs hold the same variables with the same values (nil
// and empty are equal).
func (c ConfigMap) Equal(other ConfigMap) bool { return maps.Equal(c, other) }

// Diff names the variables cur adds to c (+), changes (~) and removes (-),
// never their values: "+A, ~B, -C".
func (c ConfigMap) Diff(cur ConfigMap) string {
	var parts []string
	for _, k := range cur.Keys() {
		v, ok := c[k]
		switch {
		case !ok:
			parts = append(parts, "+"+k)
		case v != cur[k]:
			parts = append(parts, "~"+k)
		}
	}
	for _, k := range c.Keys() {
		if _, ok := cur[k]; !ok {
			parts = append(parts, "-"+k)
		}
	}
	return strings.Join(parts, ", ")
}
