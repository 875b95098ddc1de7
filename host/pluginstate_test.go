package host

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/surface"
)

// TestPluginStateAdmission shows RulePluginState: a compaction provider's
// batch may record its own state as an ignorable, log-only, bounded
// plugin/state event, and nothing else passes.
func TestPluginStateAdmission(t *testing.T) {
	module := strings.Repeat("ab", 32)
	data := func(plugin, module string, n int) []byte {
		return fmt.Appendf(nil, `{"plugin":%q,"module":%q,"state":%q}`, plugin, module,
			base64.StdEncoding.EncodeToString([]byte(strings.Repeat("s", n))))
	}
	comp := Proposer{Kind: ByCompaction, ID: "pruner"}
	cases := []struct {
		name string
		by   Proposer
		p    surface.Proposal
		frag string // empty: admitted
	}{
		{"its own state", comp, surface.Proposal{Type: TypePluginState, Data: data("pruner", module, 10), Ignorable: true}, ""},
		{"an empty state", comp, surface.Proposal{Type: TypePluginState, Data: data("pruner", module, 0), Ignorable: true}, ""},
		{"the largest state", comp, surface.Proposal{Type: TypePluginState, Data: data("pruner", module, MaxPluginStateBytes), Ignorable: true}, ""},
		{"a state past the bound", comp, surface.Proposal{Type: TypePluginState, Data: data("pruner", module, MaxPluginStateBytes+1), Ignorable: true},
			fmt.Sprintf("the state has %d bytes, more than %d", MaxPluginStateBytes+1, MaxPluginStateBytes)},
		{"another plugin's state", comp, surface.Proposal{Type: TypePluginState, Data: data("other", module, 1), Ignorable: true},
			`the state names plugin "other"; compaction provider "pruner" records only its own`},
		{"no module sum", comp, surface.Proposal{Type: TypePluginState, Data: data("pruner", "v2", 1), Ignorable: true},
			`module must be a hex SHA-256, not "v2"`},
		{"not ignorable", comp, surface.Proposal{Type: TypePluginState, Data: data("pruner", module, 1)},
			"a plugin/state event is ignorable and log-only"},
		{"on the surface", comp, surface.Proposal{Type: TypePluginState, Data: data("pruner", module, 1), Ignorable: true, Op: surface.Append},
			"a plugin/state event is ignorable and log-only"},
		{"not a record", comp, surface.Proposal{Type: TypePluginState, Data: []byte(`{"plugin":1}`), Ignorable: true},
			"the data is not a plugin/state record"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := admitFixture(t)
			before := s.Log().Events()
			evs, err := s.Propose(c.by, c.p)
			if c.frag == "" {
				require.NoError(t, err)
				require.Len(t, evs, 1)
				return
			}
			require.Equal(t, RulePluginState, surface.RuleOf(err), err.Error())
			require.ErrorContains(t, err, c.frag)
			require.Equal(t, before, s.Log().Events(), "the log is unchanged")
		})
	}
}
