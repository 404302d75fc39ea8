package app

import (
	"maps"
	"strings"
	"testing"
)

func TestParseProcfile(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    map[string]string
		wantErr string
	}{
		{
			name: "two processes",
			in:   "web: bundle exec puma -p $PORT\nworker: bundle exec sidekiq\n",
			want: map[string]string{"web": "bundle exec puma -p $PORT", "worker": "bundle exec sidekiq"},
		},
		{
			name: "comments, blank lines and indentation",
			in:   "# the app\n\n   \nweb:   ./server --port 80   \n  # indented comment\n\tclock: ./clock\n",
			want: map[string]string{"web": "./server --port 80", "clock": "./clock"},
		},
		{
			name: "colon inside the command",
			in:   "web: ./server --listen 0.0.0.0:8080\n",
			want: map[string]string{"web": "./server --listen 0.0.0.0:8080"},
		},
		{
			name: "CRLF line endings",
			in:   "web: ./server\r\nworker: ./work\r\n",
			want: map[string]string{"web": "./server", "worker": "./work"},
		},
		{
			name: "no trailing newline",
			in:   "web: ./server",
			want: map[string]string{"web": "./server"},
		},
		{name: "empty", in: "", wantErr: "declares no process types"},
		{name: "only comments", in: "# nothing\n\n# here\n", wantErr: "declares no process types"},
		{name: "line without colon", in: "web: ./server\njust a command\n", wantErr: `line 2: want "type: command", got "just a command"`},
		{name: "duplicate", in: "web: a\n\nweb: b\n", wantErr: `line 3: process "web" is declared twice`},
		{name: "no command", in: "web:\n", wantErr: `line 1: process "web" has no command`},
		{name: "no command but spaces", in: "web:    \n", wantErr: `process "web" has no command`},
		{name: "bad process name", in: "Web: ./server\n", wantErr: `line 1: invalid process name "Web"`},
		{name: "reserved process name", in: "run: ./x\n", wantErr: "reserved"},
		{name: "empty process name", in: ": ./x\n", wantErr: "process name is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseProcfile(strings.NewReader(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseProcfile error = %v, want %q", err, tt.wantErr)
				}
				if got != nil {
					t.Errorf("ParseProcfile returned %v with an error", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseProcfile: %v", err)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("ParseProcfile = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseProcessFlags(t *testing.T) {
	tests := []struct {
		name    string
		in      []string
		want    map[string]string
		wantErr string
	}{
		{name: "none", in: nil, want: map[string]string{}},
		{name: "one", in: []string{"web=./server --port 80"}, want: map[string]string{"web": "./server --port 80"}},
		{name: "two", in: []string{"web=./server", "worker= ./work "}, want: map[string]string{"web": "./server", "worker": "./work"}},
		{name: "equals in command", in: []string{"web=env A=1 ./server"}, want: map[string]string{"web": "env A=1 ./server"}},
		{name: "no equals", in: []string{"web"}, wantErr: `--process "web": want TYPE='command args'`},
		{name: "empty command: the image's own", in: []string{"web="}, want: map[string]string{"web": ""}},
		{name: "duplicate", in: []string{"web=a", "web=b"}, wantErr: "declared twice"},
		{name: "bad name", in: []string{"WEB=a"}, wantErr: `invalid process name "WEB"`},
		{name: "name with space", in: []string{"web =a"}, wantErr: "invalid process name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseProcessFlags(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseProcessFlags error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseProcessFlags: %v", err)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("ParseProcessFlags = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestValidateEnvName(t *testing.T) {
	for _, ok := range []string{"A", "_", "DATABASE_URL", "a1", "_X9", "lower"} {
		if err := ValidateEnvName(ok); err != nil {
			t.Errorf("ValidateEnvName(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "1A", "A-B", "A.B", "A B", "A=B", "Ä", "$A"} {
		err := ValidateEnvName(bad)
		if err == nil {
			t.Errorf("ValidateEnvName(%q) = nil, want an error", bad)
			continue
		}
		if !strings.Contains(err.Error(), "invalid config name") {
			t.Errorf("ValidateEnvName(%q) = %q, want it to say what is wrong", bad, err)
		}
	}
}

func TestParseEnvFile(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    ConfigMap
		wantErr string
	}{
		{
			name: "plain",
			in:   "A=1\nB=two words\n",
			want: ConfigMap{"A": "1", "B": "two words"},
		},
		{
			name: "comments, blanks, export and spaces",
			in:   "# db\n\nexport DB_URL=postgres://x\n  TOKEN = abc  \n",
			want: ConfigMap{"DB_URL": "postgres://x", "TOKEN": "abc"},
		},
		{
			name: "quotes are removed when they match",
			in:   "A=\"double quoted\"\nB='single quoted'\nC=\"\"\nD='mismatch\"\nE=\"\n",
			want: ConfigMap{"A": "double quoted", "B": "single quoted", "C": "", "D": "'mismatch\"", "E": "\""},
		},
		{
			name: "quotes keep inner spaces and hashes",
			in:   "A=\"  padded # not a comment \"\n",
			want: ConfigMap{"A": "  padded # not a comment "},
		},
		{
			name: "value with equals signs",
			in:   "URL=https://x/?a=1&b=2\n",
			want: ConfigMap{"URL": "https://x/?a=1&b=2"},
		},
		{
			name: "empty value",
			in:   "EMPTY=\n",
			want: ConfigMap{"EMPTY": ""},
		},
		{
			name: "a key named export",
			in:   "export=1\n",
			want: ConfigMap{"export": "1"},
		},
		{
			name: "later lines win",
			in:   "A=1\nA=2\n",
			want: ConfigMap{"A": "2"},
		},
		{name: "empty file", in: "", want: ConfigMap{}},
		{name: "no equals", in: "A=1\nJUSTAKEY\n", wantErr: "line 2: want KEY=VALUE"},
		{name: "bad key", in: "\n1A=x\n", wantErr: `line 2: invalid config name "1A"`},
		{name: "empty key", in: "=x\n", wantErr: `line 1: invalid config name ""`},
		{name: "dashed key", in: "MY-KEY=x\n", wantErr: `invalid config name "MY-KEY"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseEnvFile(strings.NewReader(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseEnvFile error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseEnvFile: %v", err)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("ParseEnvFile = %q, want %q", got, tt.want)
			}
		})
	}
}

// An error about a bad line must not echo the line: it may hold a secret.
func TestParseEnvFileErrorHidesValue(t *testing.T) {
	_, err := ParseEnvFile(strings.NewReader("1BAD=s3cr3t-value\n"))
	if err == nil {
		t.Fatal("want an error")
	}
	if strings.Contains(err.Error(), "s3cr3t-value") {
		t.Errorf("error %q shows the value", err)
	}
	_, err = ParseEnvFile(strings.NewReader("s3cr3t-value-without-key\n"))
	if err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("error %v shows the line", err)
	}
}

func TestParseEnvFileLongValue(t *testing.T) {
	long := strings.Repeat("x", 200*1024) // over bufio's default 64 KiB token
	got, err := ParseEnvFile(strings.NewReader("CERT=" + long + "\n"))
	if err != nil {
		t.Fatalf("ParseEnvFile: %v", err)
	}
	if got["CERT"] != long {
		t.Errorf("value has %d bytes, want %d", len(got["CERT"]), len(long))
	}
}
