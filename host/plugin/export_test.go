package plugin

// HoldCompileSlot takes r's compilation slot, as a compilation of a module
// not known to the cache does, until release is called.
func HoldCompileSlot(r *Runtime) (release func()) {
	r.compileSlot <- struct{}{}
	return func() { <-r.compileSlot }
}
