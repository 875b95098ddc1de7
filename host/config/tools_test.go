package config_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/config"
)

func TestToolTimeouts(t *testing.T) {
	cases := []struct {
		name     string
		file     string
		env      []string
		timeout  time.Duration
		timeouts map[string]time.Duration
		key      string // a problem expected at this key
		want     []string
	}{
		{name: "default", timeout: time.Minute, timeouts: map[string]time.Duration{}},
		{name: "from the file", file: "tools:\n  timeout: 90s\n  timeouts:\n    read_file: 5s\n",
			timeout: 90 * time.Second, timeouts: map[string]time.Duration{"read_file": 5 * time.Second}},
		{name: "from the environment", env: []string{"WEIR_TOOLS_TIMEOUT=2m", "WEIR_TOOLS__TIMEOUTS__LIST_FILES=3s"},
			timeout: 2 * time.Minute, timeouts: map[string]time.Duration{"list_files": 3 * time.Second}},
		{name: "zero", file: "tools:\n  timeout: 0s\n", key: "tools.timeout", want: []string{"must be a positive duration", `"60s"`}},
		{name: "negative override", file: "tools:\n  timeouts:\n    read_file: -1s\n",
			key: "tools.timeouts.read_file", want: []string{"must be a positive duration"}},
		{name: "not a duration", file: "tools:\n  timeout: soon\n", key: "tools.timeout", want: []string{"duration"}},
		{name: "unknown key", file: "tools:\n  timout: 5s\n", key: "tools.timout", want: []string{`did you mean "timeout"?`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := map[string]string{}
			if c.file != "" {
				files["weir.yaml"] = c.file
			}
			cfg, _, err := load(t, setup(t, files), c.env)
			if c.key != "" {
				problem(t, err, c.key, c.want...)
				return
			}
			require.NoError(t, err)
			require.Equal(t, config.Tools{Timeout: c.timeout, Timeouts: c.timeouts, Policy: map[string]string{}}, cfg.Tools)
		})
	}
}
