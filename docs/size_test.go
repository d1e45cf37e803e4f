package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestSizes: no function over 60 lines in shared/, functions/ or infra/,
// and no file of shared/ over 450, so that a room holds one concern and a
// function reads at a glance (tests aside).
func TestSizes(t *testing.T) {
	const maxFile, maxFunc = 450, 60
	fset := token.NewFileSet()
	for _, dir := range []string{"../shared", "../functions", "../infra"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			if n := fset.File(f.Pos()).LineCount(); dir == "../shared" && n > maxFile {
				t.Errorf("%s: %d lines, over %d", path, n, maxFile)
			}
			for _, decl := range f.Decls {
				if fn, ok := decl.(*ast.FuncDecl); ok && fn.Body != nil {
					if n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; n > maxFunc {
						t.Errorf("%s: %s is %d lines, over %d", path, fn.Name.Name, n, maxFunc)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
