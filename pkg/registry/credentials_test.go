package registry

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestDockerConfigJSON(t *testing.T) {
	c := Credentials{Server: "registry.example.com:5000", Username: "bot", Password: "s3cr:et"}
	b, err := DockerConfigJSON(c)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Auths map[string]struct {
			Username, Password, Auth string
		} `json:"auths"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	a, ok := got.Auths["registry.example.com:5000"]
	if !ok || len(got.Auths) != 1 {
		t.Fatalf("auths: %s", b)
	}
	if a.Username != "bot" || a.Password != "s3cr:et" {
		t.Fatalf("username/password: %+v", a)
	}
	// the kubelet splits auth at the first ':' only, so a ':' in the
	// password survives
	dec, err := base64.StdEncoding.DecodeString(a.Auth)
	if err != nil || string(dec) != "bot:s3cr:et" {
		t.Fatalf("auth %q decodes to %q (%v)", a.Auth, dec, err)
	}

	// reading it back shows server and user only
	ls, err := logins(b)
	if err != nil || len(ls) != 1 || ls[0] != (login{Server: "registry.example.com:5000", Username: "bot"}) {
		t.Fatalf("logins: %+v %v", ls, err)
	}
}

func TestLoginsFromAuthOnly(t *testing.T) {
	b := []byte(`{"auths":{"b.io":{"auth":"` + base64.StdEncoding.EncodeToString([]byte("u2:pw")) + `"},"a.io":{"username":"u1","password":"x"}}}`)
	ls, err := logins(b)
	if err != nil {
		t.Fatal(err)
	}
	want := []login{{"a.io", "u1"}, {"b.io", "u2"}}
	if fmt.Sprint(ls) != fmt.Sprint(want) {
		t.Fatalf("got %+v, want %+v", ls, want)
	}
	if _, err := logins([]byte(`{"auths": "hunter2`)); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("bad JSON: want an error that quotes nothing, got %v", err)
	}
}

func TestCredentialsNeverFormatThePassword(t *testing.T) {
	c := Credentials{Server: "r.io", Username: "bot", Password: "hunter2"}
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%v %+v %s %#v", c, c, c, c), fmt.Sprintf("%v", &c)} {
		if strings.Contains(s, "hunter2") {
			t.Fatalf("formatting shows the password: %s", s)
		}
	}
	if err := (Credentials{Server: "r.io", Username: "bot"}).Validate(); err == nil {
		t.Fatal("an empty password passed validation")
	}
}

func TestValidateServer(t *testing.T) {
	for _, ok := range []string{
		"registry.example.com", "registry.example.com:5000", "localhost:5000", "ghcr.io",
		"https://index.docker.io/v1/", "gcr.io/my-project", "10.0.0.1:5000", "[::1]:5000", "Registry.Example.com",
	} {
		if err := ValidateServer(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "bad host", "ftp://r.io", "r.io:port", "r.io:0", "r.io:99999", "-r.io", "r_io.com", "a\tb"} {
		if err := ValidateServer(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

func TestValidateUsername(t *testing.T) {
	for _, bad := range []string{"", "a:b", "a b", "a\nb"} {
		if err := ValidateUsername(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
	for _, ok := range []string{"bot", "_json_key", "robot$ci+deploy", "user@example.com"} {
		if err := ValidateUsername(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}

func TestReadPassword(t *testing.T) {
	cases := []struct {
		in, want string
		bad      bool
	}{
		{in: "hunter2", want: "hunter2"},
		{in: "hunter2\n", want: "hunter2"},
		{in: "hunter2\r\n", want: "hunter2"},
		{in: " spaced pw ", want: " spaced pw "},
		{in: "", bad: true},
		{in: "\n", bad: true},
		{in: "hunter2\nsecond-line\n", bad: true},
		{in: strings.Repeat("x", maxPassword+1), bad: true},
	}
	for _, c := range cases {
		got, err := ReadPassword(strings.NewReader(c.in))
		if c.bad {
			if err == nil {
				t.Errorf("%q: want an error", c.in)
			} else if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "xxxx") {
				t.Errorf("%q: the error quotes the input: %v", c.in, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: got %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}
