package main

import (
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/surface"
)

// measure prices a log's surface with the token meter; nil when it cannot.
func measure(l *surface.Log) *host.Measurement {
	return nil
}
