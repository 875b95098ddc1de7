package config

import (
	"io"

	"github.com/hashicorp/go-hclog"
)

// NewLogger returns the host's logger: level and format from c, written
// to w (the CLI passes stderr, so logs never mix with output meant for
// pipes). An unknown level logs at "warn"; "off" logs nothing.
func NewLogger(c Log, w io.Writer) hclog.Logger {
	level := hclog.LevelFromString(c.Level)
	if level == hclog.NoLevel {
		level = hclog.Warn
	}
	return hclog.New(&hclog.LoggerOptions{
		Name:       "weir",
		Level:      level,
		Output:     w,
		JSONFormat: c.Format == "json",
		Color:      hclog.ColorOff,
	})
}

// PluginLogger is the sub-logger of one plugin: its lines carry the name
// "weir.plugin.NAME".
func PluginLogger(l hclog.Logger, name string) hclog.Logger {
	return l.Named("plugin." + name)
}
