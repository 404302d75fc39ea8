package app

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
)

// The fuzz targets below check properties of the parsers of user input:
// nothing panics, a refusal is an input error (exit 2), and what is
// accepted, written back in canonical form, is accepted again as the same
// value. hack/fuzz.sh runs each briefly; the f.Add calls are the seed
// corpus, with the inputs of issue 12 among them.

func FuzzParseProcfile(f *testing.F) {
	for _, s := range []string{
		"web: bundle exec puma\nworker: sidekiq\n",
		"# comment\n\nweb:python -m http.server $PORT\r\nrelease: ./migrate\n",
		"web: a:b:c\nweb: twice\n",
		"Web: x\n", "web\n", "web:\n", "run: x\n", ":x\n",
		"web: " + strings.Repeat("x", 70*1024) + "\n",
		"web: a\rb\n\xff: x\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		procs, err := ParseProcfile(strings.NewReader(string(data)))
		if err != nil {
			if msg := err.Error(); !strings.HasPrefix(msg, "line ") && msg != "the Procfile declares no process types" {
				t.Fatalf("an error that does not say where: %v", err)
			}
			return
		}
		if len(procs) == 0 {
			t.Fatal("accepted a Procfile with no process")
		}
		var b strings.Builder
		for _, name := range slices.Sorted(maps.Keys(procs)) {
			cmd := procs[name]
			if ValidateProcessName(name) != nil || cmd == "" || cmd != strings.TrimSpace(cmd) || strings.ContainsAny(cmd, "\n") {
				t.Fatalf("accepted process %q: %q", name, cmd)
			}
			fmt.Fprintf(&b, "%s: %s\n", name, cmd)
		}
		again, err := ParseProcfile(strings.NewReader(b.String()))
		if err != nil || !maps.Equal(procs, again) {
			t.Fatalf("canonical Procfile %q reads as %v, %v; want %v", b.String(), again, err, procs)
		}
	})
}

func FuzzParseEnvFile(f *testing.F) {
	for _, s := range []string{
		"A=1\nexport B=two words\n# c\n\nC='quoted'\nD=\"x\"\n",
		"A= \" spaced \" \nA=again\n", "1A=x\n", "A\n", "A=\"\n", "export A=\"=\"\n",
		"A=" + strings.Repeat("v", 100) + "\r\n", "=x\n", "A=\x00\xff\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseEnvFile(strings.NewReader(string(data)))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "line ") {
				t.Fatalf("an error that does not say where: %v", err)
			}
			return
		}
		var b strings.Builder
		for _, k := range slices.Sorted(maps.Keys(cfg)) {
			if ValidateEnvName(k) != nil || strings.Contains(cfg[k], "\n") {
				t.Fatalf("accepted %q=%q", k, cfg[k])
			}
			fmt.Fprintf(&b, "%s=\"%s\"\n", k, cfg[k]) // quoted, every value reads back as it is
		}
		again, err := ParseEnvFile(strings.NewReader(b.String()))
		if err != nil || !maps.Equal(cfg, again) {
			t.Fatalf("canonical env file %q reads as %v, %v; want %v", b.String(), again, err, cfg)
		}
	})
}

func FuzzParseEnvArgs(f *testing.F) {
	f.Add("K=v", []byte(""))
	f.Add("K=@-", []byte("secret\n"))
	f.Add("K=@-", []byte("a\r\n"))
	f.Add("1K=v", []byte(""))
	f.Add("K", []byte(""))
	f.Add("K==@-", []byte(""))
	f.Add("K=", []byte(""))
	f.Fuzz(func(t *testing.T, arg string, stdin []byte) {
		if _, v, _ := strings.Cut(arg, "="); strings.HasPrefix(v, "@") && v != "@-" {
			t.Skip("KEY=@FILE reads a file; a fuzzed path could name a device or a FIFO")
		}
		set, err := ParseEnvArgs([]string{arg}, "", strings.NewReader(string(stdin)))
		if err != nil {
			if !inputerr.Is(err) {
				t.Fatalf("a refusal that is not an input error: %v", err)
			}
			return
		}
		if len(set) != 1 || set.Size() > MaxConfigBytes {
			t.Fatalf("accepted %v", set)
		}
		for k, v := range set {
			if ValidateEnvName(k) != nil {
				t.Fatalf("accepted the name %q", k)
			}
			if strings.HasPrefix(v, "@") {
				continue // would be read as a file name
			}
			again, err := ParseEnvArgs([]string{k + "=" + v}, "", nil)
			if err != nil || !maps.Equal(set, again) {
				t.Fatalf("%s=%s reads as %v, %v; want %v", k, v, again, err, set)
			}
		}
	})
}

func FuzzParseScale(f *testing.F) {
	for _, s := range [][2]string{{"web=3", ""}, {"web+1", "worker-2"}, {"web+10000", ""}, {"web=-1", ""}, {"web=10001", ""},
		{"web=3", "web+1"}, {"=3", ""}, {"web=", ""}, {"web=+3", ""}, {"web-+3", ""}, {"run=1", ""}, {"web=0x10", ""}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		args := []string{a}
		if b != "" {
			args = append(args, b)
		}
		ops, err := ParseScale(args)
		if err != nil {
			if !inputerr.Is(err) {
				t.Fatalf("a refusal that is not an input error: %v", err)
			}
			return
		}
		canon := make([]string, len(ops))
		for i, op := range ops {
			if ValidateProcessName(op.Process) != nil || op.N < 0 || op.N > MaxUnits || !strings.ContainsRune("=+-", rune(op.Op)) {
				t.Fatalf("accepted %+v", op)
			}
			canon[i] = fmt.Sprintf("%s%c%d", op.Process, op.Op, op.N)
		}
		again, err := ParseScale(canon)
		if err != nil || !slices.Equal(ops, again) {
			t.Fatalf("%v reads as %v, %v; want %v", canon, again, err, ops)
		}
		a2 := &App{Name: "shop", Processes: map[string]Process{}}
		for _, op := range ops {
			a2.Processes[op.Process] = Process{Replicas: MaxUnits / 2}
		}
		if err := a2.ApplyScale(ops); err == nil {
			for name, p := range a2.Processes {
				if p.Replicas < 0 || p.Replicas > MaxUnits {
					t.Fatalf("%v left %s with %d units", canon, name, p.Replicas)
				}
			}
		}
	})
}

func FuzzLimits(f *testing.F) {
	f.Add("500m", "256Mi", "100m", "128Mi")
	f.Add("1", "1Gi", "2", "")
	f.Add("0", "-1", "", "")
	f.Add("1e3", "1E", "0.5", "9223372036854775807")
	f.Add("1.5.5", "Mi", "", "")
	f.Fuzz(func(t *testing.T, cpu, mem, cpuReq, memReq string) {
		l := Limits{CPU: cpu, Memory: mem, CPURequest: cpuReq, MemoryRequest: memReq}
		if err := l.Validate(); err != nil {
			if !inputerr.Is(err) {
				t.Fatalf("a refusal that is not an input error: %v", err)
			}
			return
		}
		canon := func(s string) string {
			if s == "" {
				return ""
			}
			q := resource.MustParse(s)
			return q.String()
		}
		c := Limits{CPU: canon(cpu), Memory: canon(mem), CPURequest: canon(cpuReq), MemoryRequest: canon(memReq)}
		if err := c.Validate(); err != nil {
			t.Fatalf("canonical %+v of accepted %+v: %v", c, l, err)
		}
	})
}

func FuzzParseProbe(f *testing.F) {
	for _, s := range []string{"http:8080/healthz", "http:80", "http:80/a b", "http:80/a%20b?x=1", "http:0/", "http:65536/",
		"tcp:5432", "tcp:+22", "tcp:080", "exec:test -f /tmp/ok", "exec: ", "ftp:21", "http", "http:80/%zz", "http:80/\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		p, err := ParseProbe(spec)
		if herr := (Healthcheck{Readiness: spec}).Validate(); (err == nil) != (herr == nil) || (herr != nil && !inputerr.Is(herr)) {
			t.Fatalf("ParseProbe: %v; Validate: %v", err, herr)
		}
		if err != nil {
			return
		}
		switch p.Kind {
		case "http":
			if p.Port < 1 || !strings.HasPrefix(p.Path, "/") || checkProbePath(p.Path) != nil {
				t.Fatalf("accepted %+v", p)
			}
		case "tcp":
			if p.Port < 1 {
				t.Fatalf("accepted %+v", p)
			}
		case "exec":
			if strings.TrimSpace(p.Command) == "" {
				t.Fatalf("accepted %+v", p)
			}
		default:
			t.Fatalf("accepted kind %q", p.Kind)
		}
		again, err := ParseProbe(p.String())
		if err != nil || again != p {
			t.Fatalf("%q reads as %+v, %v; want %+v", p.String(), again, err, p)
		}
	})
}

func FuzzAutoscaleCPU(f *testing.F) {
	for _, s := range []string{"70%", "70", "4294967366%", "-1%", "0%", "1000%", "1001%", "%", "70%%", "+5%", "007%"} {
		f.Add(s, int32(1), int32(3))
	}
	f.Fuzz(func(t *testing.T, cpu string, lo, hi int32) {
		o := SetAutoscaleOptions{App: "shop", Process: "web", Min: lo, Max: hi, CPU: cpu}
		as, err := o.Autoscale()
		if err != nil {
			if !inputerr.Is(err) {
				t.Fatalf("a refusal that is not an input error: %v", err)
			}
			return
		}
		if as.CPUPercent < 1 || as.CPUPercent > 1000 || as.Min < 1 || as.Max < as.Min || as.Max > MaxUnits {
			t.Fatalf("accepted %+v from %q", as, cpu)
		}
		o.CPU = fmt.Sprintf("%d%%", as.CPUPercent)
		if again, err := o.Autoscale(); err != nil || again != as {
			t.Fatalf("%s reads as %+v, %v; want %+v", o.CPU, again, err, as)
		}
	})
}

func FuzzParseTags(f *testing.F) {
	for _, s := range []string{"disk=ssd", "example.com/gpu=true", "tug.dev/pool=x", "k=", "=v", "bad key=v", "k=v=w", "k", "a/b/c=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, arg string) {
		tags, err := ParseTags([]string{arg})
		if err != nil {
			if !inputerr.Is(err) {
				t.Fatalf("a refusal that is not an input error: %v", err)
			}
			return
		}
		for k, v := range tags {
			if kube.ValidateLabelKey(k) != nil || kube.ValidateLabelValue("tag value", v) != nil || k == kube.LabelPool {
				t.Fatalf("accepted %q=%q", k, v)
			}
			if err := ValidateTagKeys([]string{k}); err != nil {
				t.Fatalf("a key set cannot be unset: %v", err)
			}
			again, err := ParseTags([]string{k + "=" + v})
			if err != nil || !maps.Equal(tags, again) {
				t.Fatalf("%s=%s reads as %v, %v", k, v, again, err)
			}
		}
	})
}
