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

// CheckModule runs the checks Load makes on a module's code before
// compiling it: it walks the code section once, in time linear in its
// size, and returns an error naming the first limit of l the module
// exceeds, for example "control nesting depth 100000 exceeds the limit 4096
// (function 3)", or naming a function it cannot walk (an instruction
// outside WebAssembly 2.0, threads, tail calls, exception handling and
// typed function references).
func CheckModule(wasm []byte, l ModuleLimits) error {
	mod, err := wasmparse.Parse(wasm)
	if err != nil {
		return err
	}
	_, err = mod.CheckCode(wasmparse.CodeLimits(l))
	return err
}
