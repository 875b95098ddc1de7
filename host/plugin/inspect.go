package plugin

import (
	"github.com/weirhost/weir/host/plugin/internal/wasmparse"
)

// ModuleInfo lists what a module imports and exports, as "module.name" and
// name strings with their signatures, for tools that show a plugin to a
// person before loading it.
type ModuleInfo struct {
	Imports []string
	Exports []string
}

// Inspect reads a module's imports and exports without compiling it.
func Inspect(wasm []byte) (*ModuleInfo, error) {
	mod, err := wasmparse.Parse(wasm)
	if err != nil {
		return nil, err
	}
	info := &ModuleInfo{}
	for _, imp := range mod.Imports {
		s := imp.Module + "." + imp.Name
		if imp.Kind == wasmparse.KindFunc {
			s += " " + imp.Type.String()
		} else {
			s += " (" + imp.Kind.String() + ")"
		}
		info.Imports = append(info.Imports, s)
	}
	for _, e := range mod.Exports {
		s := e.Name
		if e.Kind == wasmparse.KindFunc {
			s += " " + e.Type.String()
		} else {
			s += " (" + e.Kind.String() + ")"
		}
		info.Exports = append(info.Exports, s)
	}
	return info, nil
}
