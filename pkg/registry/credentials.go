// Package registry keeps an app's private-registry credentials: a
// kubernetes.io/dockerconfigjson Secret that every unit and one-off run pod
// pulls its image with (imagePullSecrets). The password goes into that Secret
// and nowhere else: never into output, errors, logs or the app's record.
package registry

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/util/validation"

	"tug.dev/tug/pkg/inputerr"
)

// Credentials log in to one registry server.
type Credentials struct {
	Server   string
	Username string
	Password string
}

// String shows where the credentials log in, never the password, so a stray
// %v or %s cannot leak it.
func (c Credentials) String() string { return c.Username + "@" + c.Server }

// GoString keeps %#v from printing the password too.
func (c Credentials) GoString() string {
	return fmt.Sprintf("registry.Credentials{Server: %q, Username: %q, Password: <hidden>}", c.Server, c.Username)
}

// Validate checks the server and username; the password only for being
// there, and its error, an input error, never quotes it.
func (c Credentials) Validate() error {
	if err := ValidateServer(c.Server); err != nil {
		return err
	}
	if err := ValidateUsername(c.Username); err != nil {
		return err
	}
	if c.Password == "" {
		return inputerr.Errorf("the password is empty")
	}
	return nil
}

// ValidateServer checks a registry server as `docker login` takes it:
// HOST or HOST:PORT, optionally with a path (gcr.io/project) or an http(s)://
// scheme (https://index.docker.io/v1/). Its error is an input error.
func ValidateServer(s string) error {
	return inputerr.Wrap(validateServer(s))
}

func validateServer(s string) error {
	if s == "" {
		return errors.New("--server is required: the registry's host, e.g. registry.example.com")
	}
	bad := func(why string) error {
		return fmt.Errorf("invalid --server %q: %s; give a host such as registry.example.com or registry.example.com:5000", s, why)
	}
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return bad("it contains spaces")
	}
	rest := s
	if scheme, after, ok := strings.Cut(s, "://"); ok {
		if scheme != "https" && scheme != "http" {
			return bad("the scheme must be https:// or http://")
		}
		rest = after
	}
	hostPort, _, _ := strings.Cut(rest, "/")
	host := hostPort
	if h, port, err := net.SplitHostPort(hostPort); err == nil {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return bad("the port must be a number from 1 to 65535")
		}
		host = h
	} else if strings.Contains(hostPort, ":") && net.ParseIP(hostPort) == nil {
		return bad("the port must be a number from 1 to 65535")
	}
	if net.ParseIP(host) != nil {
		return nil
	}
	if errs := validation.IsDNS1123Subdomain(strings.ToLower(host)); len(errs) > 0 {
		return bad("the host is not a valid DNS name")
	}
	return nil
}

// ValidateUsername checks a registry user name. A ':' cannot be told apart
// from the separator in the auth field, so it is refused. Its error is an
// input error.
func ValidateUsername(u string) error {
	return inputerr.Wrap(validateUsername(u))
}

func validateUsername(u string) error {
	switch {
	case u == "":
		return errors.New("--username is required: the user (or token name) to log in as")
	case strings.Contains(u, ":"):
		return fmt.Errorf("invalid --username %q: it cannot contain ':'", u)
	case strings.IndexFunc(u, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return fmt.Errorf("invalid --username %q: it cannot contain spaces", u)
	}
	return nil
}

// maxPassword bounds what ReadPassword takes from stdin: tokens are long
// (a few KiB for some clouds), but not that long.
const maxPassword = 64 << 10

// ReadPassword reads the password from r the way `docker login
// --password-stdin` does: everything, less one trailing newline. Its errors
// are input errors, and never contain what was read.
func ReadPassword(r io.Reader) (string, error) {
	p, err := readPassword(r)
	return p, inputerr.Wrap(err)
}

func readPassword(r io.Reader) (string, error) {
	b, err := io.ReadAll(io.LimitReader(bufio.NewReader(r), maxPassword+1))
	if err != nil {
		return "", fmt.Errorf("reading the password from stdin: %w", err)
	}
	if len(b) > maxPassword {
		return "", fmt.Errorf("the password on stdin is longer than %d KiB; pipe in the password alone", maxPassword>>10)
	}
	p := strings.TrimSuffix(string(b), "\n")
	p = strings.TrimSuffix(p, "\r")
	switch {
	case p == "":
		return "", errors.New("no password on stdin: pipe it in, e.g. 'printf %s \"$TOKEN\" | tug registry set APP --server HOST --username USER --password-stdin'")
	case strings.ContainsAny(p, "\r\n"):
		return "", errors.New("the password on stdin spans several lines; pipe in the password alone")
	}
	return p, nil
}

// dockerConfig is the .dockerconfigjson format the kubelet reads.
type dockerConfig struct {
	Auths map[string]dockerAuth `json:"auths"`
}

type dockerAuth struct {
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	Auth     string `json:"auth,omitempty"`
}

// DockerConfigJSON renders the .dockerconfigjson of a
// kubernetes.io/dockerconfigjson Secret for c.
func DockerConfigJSON(c Credentials) ([]byte, error) {
	return json.Marshal(dockerConfig{Auths: map[string]dockerAuth{
		c.Server: {
			Username: c.Username,
			Password: c.Password,
			Auth:     base64.StdEncoding.EncodeToString([]byte(c.Username + ":" + c.Password)),
		},
	}})
}

// login is what may be shown of a stored .dockerconfigjson: server and user.
type login struct {
	Server, Username string
}

// logins reads the servers and users of a .dockerconfigjson, dropping the
// passwords. A user given only through the auth field is decoded from it.
func logins(b []byte) ([]login, error) {
	var cfg dockerConfig
	if err := json.Unmarshal(b, &cfg); err != nil {
		// not json.Unmarshal's error: it may quote the content
		return nil, errors.New("its .dockerconfigjson is not valid JSON")
	}
	out := make([]login, 0, len(cfg.Auths))
	for server, a := range cfg.Auths {
		user := a.Username
		if user == "" && a.Auth != "" {
			if dec, err := base64.StdEncoding.DecodeString(a.Auth); err == nil {
				user, _, _ = strings.Cut(string(dec), ":")
			}
		}
		out = append(out, login{Server: server, Username: user})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Server < out[j].Server })
	return out, nil
}
