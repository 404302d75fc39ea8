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
	set := ConfigMap{}
	stdinUsed := false
	readStdin := func(what string) ([]byte, error) {
		if stdinUsed {
			return nil, inputerr.Errorf("%s: standard input can be read only once", what)
		}
		stdinUsed = true
		return ReadLimited(stdin, what, MaxConfigBytes)
	}
	if fromFile != "" {
		var b []byte
		var err error
		if fromFile == "-" {
			b, err = readStdin("--from-env-file -")
		} else {
			b, err = ReadFileArgLimit("--from-env-file", fromFile, MaxConfigBytes)
		}
		if err != nil {
			return nil, err
		}
		cfg, err := ParseEnvFile(bytes.NewReader(b))
		if err != nil {
			return nil, inputerr.Errorf("--from-env-file %s: %v", fromFile, err)
		}
		for k, v := range cfg {
			set[k] = v
		}
	}
	for _, arg := range args {
		k, v, ok := strings.Cut(arg, "=")
		if !ok {
			return nil, inputerr.Errorf("%q is not KEY=VALUE; to remove a variable use 'tug env unset'", arg)
		}
		if err := ValidateEnvName(k); err != nil {
			return nil, err
		}
		if strings.HasPrefix(v, "@") {
			var b []byte
			var err error
			if v == "@-" {
				b, err = readStdin(k + "=@-")
			} else {
				b, err = ReadFileArgLimit(k+"=@", v[1:], MaxConfigBytes)
			}
			if err != nil {
				return nil, err
			}
			// a file or pipe usually ends with one newline that is not part of the value
			v = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		}
		set[k] = v
	}
	if len(set) == 0 {
		return nil, inputerr.Errorf("nothing to set: give KEY=VALUE arguments or --from-env-file")
	}
	for _, k := range set.Keys() {
		if err := ValidateEnvValue(k, set[k]); err != nil {
			return nil, err
		}
	}
	if n := set.Size(); n > MaxConfigBytes {
		return nil, inputerr.Errorf("the config to set is %d bytes; the limit is %s (an app's config lives in one Secret)", n, text.Size(MaxConfigBytes))
	}
	return set, nil
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
