package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// body is a function of n lines, func keyword to closing brace.
func body(decl string, n int) string {
	return decl + " {\n" + strings.Repeat("\t_ = 0\n", n-2) + "}\n"
}

func TestRunReportsLongFunctions(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"go.mod": "module example\n",
		"a.go": "package a\n\n" +
			"// short is at the limit.\n" + body("func short()", 5) + "\n" +
			"// long is one over.\n" + body("func long()", 6) + "\n" +
			"type T struct{}\n\n" + body("func (t *T) m()", 7) + "\n" + body("func (T) v()", 6) + "\n" +
			"type G[K any] struct{}\n\n" + body("func (g G[K]) gen()", 6) + "\n" +
			"// cases is a data table.\n//\n//tug:table\n" + body("func cases()", 20) + "\n" +
			"//tug:table\n\n" + body("func notRightBefore()", 6) + "\n" +
			"func literal() {\n\tf := func() {\n" + strings.Repeat("\t\t_ = 0\n", 4) + "\t}\n\tf()\n}\n",
		"a_test.go":         "package a\n\n" + body("func inATest()", 9),
		"testdata/x.go":     "package x\n\n" + body("func inTestdata()", 9),
		".hidden/x.go":      "package x\n\n" + body("func hidden()", 9),
		"_skip/x.go":        "package x\n\n" + body("func underscore()", 9),
		"other/go.mod":      "module other\n",
		"other/x.go":        "package x\n\n" + body("func otherModule()", 9),
		"sub/b.go":          "package sub\n\n" + body("func inSub()", 9),
		"notes.txt":         body("func text()", 9),
		"sub/vendor/v/v.go": "package v\n\n" + body("func vendored()", 9),
	}
	for name, data := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out, errOut bytes.Buffer
	if code := run(&out, &errOut, 5, []string{root}); code != 1 || errOut.Len() != 0 {
		t.Errorf("exit %d, stderr %q; want 1 and nothing", code, errOut.String())
	}
	a, sub := filepath.Join(root, "a.go"), filepath.Join(root, "sub", "b.go")
	want := fmt.Sprintf("%[1]s:11: long is 6 lines (over 5)\n"+
		"%[1]s:20: (*T).m is 7 lines (over 5)\n"+
		"%[1]s:28: T.v is 6 lines (over 5)\n"+
		"%[1]s:37: G.gen is 6 lines (over 5)\n"+
		"%[1]s:70: notRightBefore is 6 lines (over 5)\n"+
		"%[1]s:77: literal is 9 lines (over 5)\n"+
		"%[2]s:3: inSub is 9 lines (over 5)\n", a, sub)
	if out.String() != want {
		t.Errorf("reported\n%s\nwant\n%s", out.String(), want)
	}

	out.Reset()
	if code := run(&out, &errOut, 10, []string{root}); code != 0 || out.Len() != 0 {
		t.Errorf("with a limit all meet: exit %d, %q", code, out.String())
	}

	if err := os.WriteFile(filepath.Join(root, "sub", "bad.go"), []byte("package sub\nfunc {"), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code := run(&out, &errOut, 5, []string{root}); code != 2 || out.Len() != 0 || !strings.Contains(errOut.String(), "bad.go") {
		t.Errorf("a file that does not parse: exit %d, out %q, stderr %q; want 2, nothing, the file", code, out.String(), errOut.String())
	}
}
