package imagebuild

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Repository is where a build pushes: a registry and a path in it, the
// grammar of the distribution spec's repository names.
type Repository struct {
	Registry string // HOST[:PORT]; "" is Docker Hub
	Path     string
}

func (r Repository) String() string {
	if r.Registry == "" {
		return r.Path
	}
	return r.Registry + "/" + r.Path
}

// maxRepositoryName is the registry's limit on a repository's name.
const maxRepositoryName = 255

// ParseRepository parses a repository name strictly: no tag, no digest
// (tug pushes the tag latest and deploys by digest), lower-case path
// components. It is the check the agent's go-containerregistry would make
// in the pod, made before anything is created. (go-containerregistry
// itself stays out of tug's binary: TestBinaryStaysLean.)
func ParseRepository(s string) (Repository, error) {
	if s == "" {
		return Repository{}, errors.New("empty")
	}
	if strings.ContainsAny(s, " \t\r\n") {
		return Repository{}, errors.New("it has spaces")
	}
	if i := strings.IndexByte(s, '@'); i >= 0 {
		return Repository{}, fmt.Errorf("it has a digest (%s): name the repository alone", s[i:])
	}
	var r Repository
	rest := s
	if host, p, ok := strings.Cut(s, "/"); ok && (strings.ContainsAny(host, ".:") || host == "localhost") {
		if err := checkRegistry(host); err != nil {
			return Repository{}, err
		}
		r.Registry, rest = host, p
	} else if !ok && (s == "localhost" || isHostPort(s)) {
		return Repository{}, errors.New("it names a registry but no repository in it")
	}
	if rest == "" {
		return Repository{}, errors.New("it names a registry but no repository in it")
	}
	last := rest[strings.LastIndexByte(rest, '/')+1:]
	if i := strings.IndexByte(last, ':'); i >= 0 {
		return Repository{}, fmt.Errorf("it has a tag (%s): name the repository alone", last[i:])
	}
	for _, c := range strings.Split(rest, "/") {
		if err := checkPathComponent(c); err != nil {
			return Repository{}, err
		}
	}
	r.Path = rest
	if n := len(r.String()); n > maxRepositoryName {
		return Repository{}, fmt.Errorf("it is %d characters long; registries take %d at most", n, maxRepositoryName)
	}
	return r, nil
}

// isHostPort: "name.example.com" or "host:5000", a registry without a path.
func isHostPort(s string) bool {
	if h, p, ok := strings.Cut(s, ":"); ok {
		_, err := strconv.Atoi(p)
		return err == nil && h != ""
	}
	return strings.Contains(s, ".") && checkRegistry(s) == nil
}

func checkRegistry(host string) error {
	h, port := host, ""
	if strings.HasPrefix(h, "[") { // [IPv6]:port
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return fmt.Errorf("its registry %q has an unclosed [", host)
		}
		after := h[end+1:]
		if h = h[1:end]; h == "" || strings.Trim(h, "0123456789abcdefABCDEF:.") != "" {
			return fmt.Errorf("its registry %q is not an IPv6 address", host)
		}
		if after != "" {
			if !strings.HasPrefix(after, ":") {
				return fmt.Errorf("its registry %q is not a host name", host)
			}
			if port = after[1:]; port == "" {
				return fmt.Errorf("its registry %q has an empty port", host)
			}
		}
	} else {
		if i := strings.LastIndexByte(h, ':'); i >= 0 {
			if h, port = h[:i], h[i+1:]; port == "" {
				return fmt.Errorf("its registry %q has an empty port", host)
			}
		}
		for _, label := range strings.Split(h, ".") {
			if !hostLabel(label) {
				return fmt.Errorf("its registry %q is not a host name", host)
			}
		}
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || port[0] == '+' || port[0] == '-' {
			return fmt.Errorf("its registry %q has a bad port", host)
		}
	}
	return nil
}

// hostLabel: letters, digits and inner hyphens (registries are host names).
func hostLabel(l string) bool {
	if l == "" || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// checkPathComponent: [a-z0-9]+ joined by ".", "_", "__" or runs of "-".
func checkPathComponent(c string) error {
	if c == "" {
		return errors.New("it has an empty path component (a leading, trailing or double /)")
	}
	if strings.ToLower(c) != c {
		return fmt.Errorf("its path %q has capitals: repository paths are lower case", c)
	}
	alnum := func(b byte) bool { return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' }
	if !alnum(c[0]) || !alnum(c[len(c)-1]) {
		return fmt.Errorf("its path component %q must start and end with a letter or digit", c)
	}
	for i := 0; i < len(c); {
		if alnum(c[i]) {
			i++
			continue
		}
		j := i
		for j < len(c) && !alnum(c[j]) {
			j++
		}
		switch sep := c[i:j]; {
		case sep == "." || sep == "_" || sep == "__" || strings.Trim(sep, "-") == "":
		default:
			return fmt.Errorf("its path component %q has %q: only letters, digits and single '.', '_', '__' or '-' between them", c, sep)
		}
		i = j
	}
	return nil
}
