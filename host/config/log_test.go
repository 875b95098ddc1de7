package config_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/config"
)

func TestLoggerJSON(t *testing.T) {
	var buf bytes.Buffer
	log := config.NewLogger(config.Log{Level: "info", Format: "json"}, &buf)
	log.Debug("hidden", "k", 1)
	log.Info("started", "route", "deepseek", "window", 128000)
	config.PluginLogger(log, "token-meter").Warn("slow call", "ms", 12)

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2, "the debug line is below the level:\n%s", buf.String())
	var first, second map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &first))
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &second))
	require.Equal(t, "info", first["@level"])
	require.Equal(t, "started", first["@message"])
	require.Equal(t, "weir", first["@module"])
	require.Equal(t, "deepseek", first["route"])
	require.EqualValues(t, 128000, first["window"])
	require.Equal(t, "warn", second["@level"])
	require.Equal(t, "weir.plugin.token-meter", second["@module"])
	require.EqualValues(t, 12, second["ms"])
}

func TestLoggerLevels(t *testing.T) {
	cases := []struct {
		level string
		want  []string // messages written, of debug, info, warn, error
	}{
		{"trace", []string{"d", "i", "w", "e"}},
		{"debug", []string{"d", "i", "w", "e"}},
		{"info", []string{"i", "w", "e"}},
		{"warn", []string{"w", "e"}},
		{"error", []string{"e"}},
		{"off", nil},
	}
	for _, c := range cases {
		t.Run(c.level, func(t *testing.T) {
			var buf bytes.Buffer
			log := config.NewLogger(config.Log{Level: c.level, Format: "text"}, &buf)
			log.Debug("d")
			log.Info("i")
			log.Warn("w")
			log.Error("e")
			var got []string
			for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
				if line == "" {
					continue
				}
				fields := strings.Fields(line)
				got = append(got, fields[len(fields)-1])
				require.Contains(t, line, "weir:", "text lines carry the logger name")
			}
			require.Equal(t, c.want, got)
		})
	}
}

func TestLoggerFromLoadedConfig(t *testing.T) {
	cfg, _, err := load(t, t.TempDir(), []string{"WEIR_LOG_LEVEL=error", "WEIR_LOG_FORMAT=json"})
	require.NoError(t, err)
	var buf bytes.Buffer
	log := config.NewLogger(cfg.Log, &buf)
	log.Warn("below")
	require.Zero(t, buf.Len())
	log.Error("shown")
	var m map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &m))
	require.Equal(t, "shown", m["@message"])
}
