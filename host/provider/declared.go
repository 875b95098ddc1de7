package provider

import "slices"

// DeclaredEvents implements host.DeclaredEvents: the ignorable event types
// the plugin declared in describe (ABI minor 2), which it may propose
// besides its kind's own.
func (c *Compaction) DeclaredEvents() []string { return slices.Clone(c.p.Description().Events) }
