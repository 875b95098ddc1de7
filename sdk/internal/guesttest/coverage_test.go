package guesttest_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/sdk/internal/guesttest"
)

// TestSDKsCoverTheABI fails when the ABI gains an import, a method or a
// field of Description, CompactionRequest or CompactionResult that one of
// the SDKs (C, AssemblyScript, Go) does not handle. The ABI's side is read
// from its sources: the host's import table (host/plugin/hostmodule.go),
// abi.Methods and the messages of sdk/abi/weir.proto; each SDK's side from
// the functions of its source that write or read each of them.
func TestSDKsCoverTheABI(t *testing.T) {
	root := guesttest.RepoRoot(t)
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		require.NoError(t, err)
		return string(b)
	}
	c := read("sdk/c/weir/weir.c")
	h := read("sdk/c/weir/weir.h")
	as := read("sdk/assemblyscript/weir/index.ts")
	proto := read("sdk/abi/weir.proto")

	imports := hostImports(t, root)
	require.Contains(t, imports, abi.ImportEvent, "the host's import table was not read")
	goImports := read("sdk/hostcall_wasip1.go")
	for _, name := range imports {
		require.Contains(t, c, fmt.Sprintf("WEIR_IMPORT(%q)", name), "C SDK: no wrapper of the %s import", name)
		require.Contains(t, as, fmt.Sprintf("@external(\"weir\", %q)", name), "AssemblyScript SDK: no wrapper of the %s import", name)
		require.Contains(t, goImports, "//go:wasmimport weir "+name+"\n", "Go SDK: no wrapper of the %s import", name)
	}

	for _, m := range abi.Methods {
		require.Regexp(t, fmt.Sprintf(`WEIR_METHOD_\w+ = %d,`, m), h, "C SDK: no constant of method %s", m)
		require.Regexp(t, fmt.Sprintf(`METHOD_\w+: u32 = %d;`, m), as, "AssemblyScript SDK: no constant of method %s", m)
	}

	for _, tc := range []struct {
		message string
		c, as   string // the SDK function handling the message
		cField  string // patterns of a field's use, %d its number
		asField string
	}{
		{"Description", "do_describe", "describe", `\(&result, %d\b`, `result\.\w+\(%d\b`},
		{"CompactionRequest", "decode_compaction", "decodeCompaction", `case %d:`, `r\.num == %d\b`},
		{"CompactionResult", "", "encodeCompactionResult", `\(res->msg, %d\b|weir_pb_begin\(b, %d\)`, `result\.\w+\(%d\b`},
	} {
		fields := protoFields(t, proto, tc.message)
		require.NotEmpty(t, fields, tc.message)
		cBody := c
		if tc.c != "" {
			cBody = function(t, c, tc.c)
		}
		asBody := function(t, as, tc.as)
		for name, num := range fields {
			require.Regexp(t, strings.ReplaceAll(tc.cField, "%d", strconv.Itoa(num)), cBody,
				"C SDK: %s.%s (field %d) is not handled", tc.message, name, num)
			require.Regexp(t, fmt.Sprintf(tc.asField, num), asBody,
				"AssemblyScript SDK: %s.%s (field %d) is not handled", tc.message, name, num)
		}
	}

	// The Go SDK builds abi.Description itself: every field of it must be
	// set in its describe answer (sdk/dispatch.go).
	set := describeKeys(t, root)
	dt := reflect.TypeOf(abi.Description{})
	for i := 0; i < dt.NumField(); i++ {
		require.Contains(t, set, dt.Field(i).Name, "Go SDK: describe does not set Description.%s", dt.Field(i).Name)
	}
	require.Len(t, protoFields(t, proto, "Description"), dt.NumField(), "abi.Description and weir.proto's Description differ")
}

// hostImports are the names of the host's import table, resolved through
// the abi package's constants.
func hostImports(t *testing.T, root string) []string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join(root, "host", "plugin", "hostmodule.go"), nil, 0)
	require.NoError(t, err)
	consts := map[string]string{
		"ImportSurfaceNodes": abi.ImportSurfaceNodes, "ImportMessage": abi.ImportMessage, "ImportEvent": abi.ImportEvent,
		"ImportGenerations": abi.ImportGenerations, "ImportHeader": abi.ImportHeader, "ImportMeasure": abi.ImportMeasure,
		"ImportSummarize": abi.ImportSummarize, "ImportCountTokens": abi.ImportCountTokens, "ImportLastError": abi.ImportLastError,
	}
	var names []string
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || vs.Names[0].Name != "hostImports" {
			return true
		}
		for _, e := range vs.Values[0].(*ast.CompositeLit).Elts {
			sel := e.(*ast.KeyValueExpr).Key.(*ast.SelectorExpr)
			name, ok := consts[sel.Sel.Name]
			require.True(t, ok, "the host imports abi.%s, which this test does not know: add it here and to every SDK", sel.Sel.Name)
			names = append(names, name)
		}
		return false
	})
	return names
}

// protoFields are the field names and numbers of message in weir.proto.
func protoFields(t *testing.T, proto, message string) map[string]int {
	start := strings.Index(proto, "message "+message+" {")
	require.GreaterOrEqual(t, start, 0, "weir.proto has no message %s", message)
	end := strings.Index(proto[start:], "\n}")
	fields := map[string]int{}
	re := regexp.MustCompile(`(?m)^\s+(?:optional |repeated )?[\w.]+ (\w+) = (\d+);`)
	for _, m := range re.FindAllStringSubmatch(proto[start:start+end], -1) {
		n, _ := strconv.Atoi(m[2])
		fields[m[1]] = n
	}
	return fields
}

// function is the text of the function name's definition in src, from
// its name to its closing brace at the start of a line.
func function(t *testing.T, src, name string) string {
	re := regexp.MustCompile(`(?m)^[\w ]*\b` + name + `\([^)]*\)[^{;]*\{`)
	loc := re.FindStringIndex(src)
	require.NotNil(t, loc, "no function %s", name)
	end := strings.Index(src[loc[0]:], "\n}")
	require.GreaterOrEqual(t, end, 0)
	return src[loc[0] : loc[0]+end]
}

// describeKeys are the fields the Go SDK's describe answer sets in its
// abi.Description literal.
func describeKeys(t *testing.T, root string) map[string]bool {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join(root, "sdk", "dispatch.go"), nil, 0)
	require.NoError(t, err)
	keys := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		cl, ok := n.(*ast.CompositeLit)
		if !ok {
			return true
		}
		if sel, ok := cl.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Description" {
			for _, e := range cl.Elts {
				keys[e.(*ast.KeyValueExpr).Key.(*ast.Ident).Name] = true
			}
		}
		return true
	})
	return keys
}
