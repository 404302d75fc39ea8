package app

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseEnvArgs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	key := write("key.pem", "-----KEY-----\nabc\n")
	crlf := write("crlf.txt", "value\r\n")
	envFile := write("prod.env", "# prod\nexport A=1\nB='two words'\nC=3\n")
	badEnv := write("bad.env", "A=1\nnot a line\n")
	portEnv := write("port.env", "A=1\nPORT=-1\n")
	missing := filepath.Join(dir, "missing")

	tests := []struct {
		name     string
		args     []string
		fromFile string
		stdin    string
		want     ConfigMap
		err      string
	}{
		{name: "plain", args: []string{"A=1", "B=x=y", "EMPTY="}, want: ConfigMap{"A": "1", "B": "x=y", "EMPTY": ""}},
		{name: "file value keeps inner newlines, drops the last", args: []string{"KEY=@" + key}, want: ConfigMap{"KEY": "-----KEY-----\nabc"}},
		{name: "crlf", args: []string{"V=@" + crlf}, want: ConfigMap{"V": "value"}},
		{name: "stdin value", args: []string{"URL=@-"}, stdin: "postgres://db\n", want: ConfigMap{"URL": "postgres://db"}},
		{name: "env file, arguments win", args: []string{"C=30"}, fromFile: envFile, want: ConfigMap{"A": "1", "B": "two words", "C": "30"}},
		{name: "env file on stdin", fromFile: "-", stdin: "X=1\nY=2\n", want: ConfigMap{"X": "1", "Y": "2"}},
		{name: "stdin twice", args: []string{"A=@-"}, fromFile: "-", stdin: "X=1\n", err: "A=@-: standard input can be read only once"},
		{name: "two stdin values", args: []string{"A=@-", "B=@-"}, stdin: "x", err: "B=@-: standard input can be read only once"},
		{name: "not KEY=VALUE", args: []string{"A"}, err: `"A" is not KEY=VALUE; to remove a variable use 'tug env unset'`},
		{name: "bad name", args: []string{"1A=x"}, err: `invalid config name "1A"`},
		{name: "missing file", args: []string{"K=@" + missing}, err: "K=@" + missing + ": open"},
		{name: "missing env file", fromFile: missing, err: "--from-env-file " + missing},
		{name: "bad env file", fromFile: badEnv, err: "--from-env-file " + badEnv + ": line 2: want KEY=VALUE"},
		{name: "nothing", err: "nothing to set: give KEY=VALUE arguments or --from-env-file"},
		{name: "PORT tells tug where web listens", args: []string{"PORT=5000"}, want: ConfigMap{"PORT": "5000"}},
		{name: "PORT highest", args: []string{"PORT=65535"}, want: ConfigMap{"PORT": "65535"}},
		{name: "PORT not a number", args: []string{"PORT=http"}, err: `invalid PORT "http": PORT is the port the web process listens on`},
		{name: "PORT zero", args: []string{"PORT=0"}, err: `invalid PORT "0"`},
		{name: "PORT too high", args: []string{"PORT=65536"}, err: `invalid PORT "65536"`},
		{name: "PORT empty", args: []string{"PORT="}, err: `invalid PORT ""`},
		{name: "PORT from an env file", fromFile: portEnv, err: `invalid PORT "-1"`},
		{name: "platform names refused", args: []string{"TUG_APP=x"}, err: "TUG_APP is set by tug in every unit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseEnvArgs(tt.args, tt.fromFile, strings.NewReader(tt.stdin))
			wantErr(t, err, tt.err, true)
			if err == nil && !maps.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestValidateEnvUnset(t *testing.T) {
	wantErr(t, ValidateEnvUnset([]string{"A", "LOG_LEVEL"}), "", true)
	wantErr(t, ValidateEnvUnset([]string{"A", "B=1"}), `"B=1": unset takes names only, not KEY=VALUE`, true)
	wantErr(t, ValidateEnvUnset([]string{"A-B"}), `invalid config name "A-B"`, true)
}

func TestProcessSourceResolve(t *testing.T) {
	write := func(t *testing.T, dir, content string) {
		if err := os.WriteFile(filepath.Join(dir, "Procfile"), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name     string
		src      ProcessSource
		procfile string // written to Dir/Procfile when not empty
		want     map[string]string
		release  string
		warning  string
		err      string
	}{
		{name: "flags", src: ProcessSource{Flags: []string{"web=shop serve", "worker=shop work"}}, procfile: "web: ignored\n",
			want: map[string]string{"web": "shop serve", "worker": "shop work"}},
		{name: "bad flag", src: ProcessSource{Flags: []string{"web"}}, err: `--process "web": want TYPE='command args'`},
		{name: "no Procfile: the image's command as web", want: map[string]string{"web": ""}},
		{name: "Procfile found", procfile: "web: ./serve\nworker: ./work\n", want: map[string]string{"web": "./serve", "worker": "./work"}},
		{name: "release entry is the release phase, not a process", procfile: "web: ./serve\nrelease: ./migrate\n", want: map[string]string{"web": "./serve"},
			release: "./migrate"},
		{name: "only a release entry", procfile: "release: ./migrate\n", err: "Procfile declares only a release-phase command; add a process such as web"},
		{name: "bad Procfile", procfile: "web ./serve\n", err: `./Procfile: line 1: want "type: command"`},
		{name: "web= runs the image's own command", src: ProcessSource{Flags: []string{"web=", "worker=./w"}}, want: map[string]string{"web": "", "worker": "./w"}},
		{name: "bad --remove-process", src: ProcessSource{Remove: []string{"Web"}}, err: `--remove-process "Web": invalid process name`},
		{name: "--remove-process twice", src: ProcessSource{Remove: []string{"worker", "worker"}}, err: `--remove-process worker is given twice`},
		{name: "both", src: ProcessSource{Flags: []string{"web=x"}, Procfile: "P"}, err: "--process and --procfile cannot be used together"},
		{name: "missing --procfile", src: ProcessSource{Procfile: "/nonexistent/Procfile"}, err: "--procfile /nonexistent/Procfile:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.src.Dir = t.TempDir()
			if tt.procfile != "" {
				write(t, tt.src.Dir, tt.procfile)
			}
			change, release, warnings, err := tt.src.Resolve()
			wantErr(t, err, tt.err, true)
			if err != nil {
				return
			}
			// on a first deploy (nothing to carry over)
			got, _, err := change.Apply(nil)
			if err != nil || !maps.Equal(got, tt.want) {
				t.Errorf("processes = %q, %v; want %q", got, err, tt.want)
			}
			if release != tt.release {
				t.Errorf("release command = %q, want %q", release, tt.release)
			}
			if tt.warning == "" && len(warnings) > 0 || tt.warning != "" && (len(warnings) != 1 || warnings[0] != tt.warning) {
				t.Errorf("warnings = %q, want %q", warnings, tt.warning)
			}
		})
	}

	// --procfile names a file relative to the current directory, not Dir
	dir := t.TempDir()
	p := filepath.Join(dir, "Procfile.prod")
	if err := os.WriteFile(p, []byte("web: ./prod\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	change, _, _, err := ProcessSource{Procfile: p, Dir: t.TempDir()}.Resolve()
	if err != nil || change.Set["web"] != "./prod" || !change.Complete || change.From != "Procfile "+p {
		t.Errorf("--procfile %s: %+v, %v", p, change, err)
	}
}

func TestValidateImage(t *testing.T) {
	wantErr(t, ValidateImage("registry.example.com/shop:1.4"), "", true)
	wantErr(t, ValidateImage(" "), "--image is required", true)
	wantErr(t, ValidateImage("shop 1.4"), `invalid --image "shop 1.4": an image reference has no spaces`, true)
}

func TestParseVersionAndUnitCount(t *testing.T) {
	for in, want := range map[string]int{"v3": 3, "V12": 12, "7": 7} {
		if got, err := ParseVersion(in); err != nil || got != want {
			t.Errorf("ParseVersion(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "v", "v0", "-1", "x3"} {
		_, err := ParseVersion(in)
		wantErr(t, err, "want a release number such as v3", true)
	}
	if n, err := ParseUnitCount("10000"); err != nil || n != 10000 {
		t.Errorf("ParseUnitCount(10000) = %d, %v", n, err)
	}
	for _, in := range []string{"0", "10001", "-1", "two"} {
		_, err := ParseUnitCount(in)
		wantErr(t, err, "want a whole number from 1 to 10000", true)
	}
}
