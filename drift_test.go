package seckill_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
)

// Every drift kind the code declares is in DriftKinds (the metric's label
// values, registered at zero), and each is documented: in reconciliation's
// package doc and in the operators' table of docs/OPERATIONS.md.
func TestDriftKinds_EveryKindListedAndDocumented(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "seckill.go", nil, 0)
	require.NoError(t, err)
	var declared []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			v := spec.(*ast.ValueSpec)
			for i, name := range v.Names {
				if !strings.HasPrefix(name.Name, "Drift") || i >= len(v.Values) {
					continue
				}
				lit, ok := v.Values[i].(*ast.BasicLit)
				require.True(t, ok, "%s is not a string literal", name.Name)
				kind, err := strconv.Unquote(lit.Value)
				require.NoError(t, err)
				declared = append(declared, kind)
			}
		}
	}
	require.NotEmpty(t, declared)
	require.ElementsMatch(t, declared, seckill.DriftKinds, "DriftKinds lists every declared kind, once")

	pkgDoc, err := os.ReadFile("reconcile/reconcile.go")
	require.NoError(t, err)
	ops, err := os.ReadFile("docs/OPERATIONS.md")
	require.NoError(t, err)
	for _, kind := range seckill.DriftKinds {
		require.Contains(t, string(pkgDoc), kind, "reconcile's package doc names %s", kind)
		require.Contains(t, string(ops), "`"+kind+"`", "docs/OPERATIONS.md documents %s", kind)
	}
}
