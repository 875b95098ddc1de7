package plugin

// HoldCompileSlot takes r's compilation slot, as a compilation of a module
// not known to the cache does, until release is called.
func HoldCompileSlot(r *Runtime) (release func()) {
	r.compileSlot <- struct{}{}
	return func() { <-r.compileSlot }
}

// InterpModules reports how many modules compiled by the interpreter r
// holds, and how many plugins use each.
func InterpModules(r *Runtime) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var refs []int
	for _, e := range r.interpMods {
		refs = append(refs, e.refs)
	}
	return refs
}
