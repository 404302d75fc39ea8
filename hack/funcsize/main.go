// Command funcsize reports the functions of tug's module that are longer
// than a reader can hold in mind (issue 23):
//
//	go run ./hack/funcsize [-max 80] [DIR...]
//
// It reads every non-test .go file under each DIR (default "."), as the go
// command does: folders named testdata or vendor, or starting with "." or
// "_", are skipped, and so is a folder with a go.mod of its own (another
// module). A function's length runs from its func keyword to its closing
// brace; its doc comment does not count. A function that is a data table
// (a list of cases, a golden text) is exempt when the line just before it
// is the directive
//
//	//tug:table
//
// It prints one line per function over the limit and exits 1 when there is
// one, 2 when a file cannot be read (and then prints no functions).
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// tableDirective marks a function that is a data table.
const tableDirective = "//tug:table"

func main() {
	limit := flag.Int("max", 80, "the most lines a function may have")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: go run ./hack/funcsize [-max N] [DIR...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	os.Exit(run(os.Stdout, os.Stderr, *limit, flag.Args()))
}

// run reports to out and returns the exit code.
func run(out, errOut io.Writer, limit int, dirs []string) int {
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	var long []longFunc
	for _, dir := range dirs {
		found, err := scan(dir, limit)
		if err != nil {
			fmt.Fprintln(errOut, "funcsize:", err)
			return 2
		}
		long = append(long, found...)
	}
	for _, f := range long {
		fmt.Fprintf(out, "%s:%d: %s is %d lines (over %d)\n", f.file, f.line, f.name, f.lines, limit)
	}
	if len(long) > 0 {
		return 1
	}
	return 0
}

type longFunc struct {
	file  string
	line  int
	name  string
	lines int
}

// scan finds the functions over limit lines in the module's files under
// root, in the order of the walk (file names, then lines).
func scan(root string, limit int) ([]longFunc, error) {
	var long []longFunc
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skipDir(path, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		found, err := longFuncs(path, limit)
		long = append(long, found...)
		return err
	})
	return long, err
}

// skipDir: what the go command leaves out of ./..., and other modules.
func skipDir(path, name string) bool {
	if name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
		return true
	}
	_, err := os.Stat(filepath.Join(path, "go.mod"))
	return err == nil
}

// longFuncs are the functions of one file over limit lines that are not
// marked as tables.
func longFuncs(path string, limit int) ([]longFunc, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	tables := map[int]bool{} // lines that hold the directive
	for _, g := range f.Comments {
		for _, c := range g.List {
			if c.Text == tableDirective || strings.HasPrefix(c.Text, tableDirective+" ") {
				tables[fset.Position(c.Slash).Line] = true
			}
		}
	}
	var long []longFunc
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		start, end := fset.Position(fn.Pos()).Line, fset.Position(fn.End()).Line
		if n := end - start + 1; n > limit && !tables[start-1] {
			long = append(long, longFunc{file: path, line: start, name: funcName(fn), lines: n})
		}
	}
	return long, nil
}

// funcName is how gocyclo names a function: f, T.m or (*T).m.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	star := false
	if s, ok := t.(*ast.StarExpr); ok {
		t, star = s.X, true
	}
	// a generic receiver: T[K] is named T
	switch g := t.(type) {
	case *ast.IndexExpr:
		t = g.X
	case *ast.IndexListExpr:
		t = g.X
	}
	name := "?"
	if id, ok := t.(*ast.Ident); ok {
		name = id.Name
	}
	if star {
		return "(*" + name + ")." + fn.Name.Name
	}
	return name + "." + fn.Name.Name
}
