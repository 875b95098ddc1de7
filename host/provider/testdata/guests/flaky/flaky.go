// Package flaky is a test compaction plugin that misbehaves now and then:
// its pre-step call fails in every turn whose number is a multiple of
// "every" (configuration, default 3), and works (proposing nothing) in the
// others. With "hang" the failing calls loop forever, so the call's
// deadline stops them; otherwise they return an error.
package flaky

import (
	"errors"
	"strconv"

	"github.com/weirhost/weir/host/provider/testdata/guests/guestconf"
	"github.com/weirhost/weir/sdk"
)

var cfg = struct {
	Every int  `json:"every"`
	Hang  bool `json:"hang"`
}{Every: 3}

func configure(raw []byte) error { return guestconf.Decode(raw, &cfg) }

type compaction struct{}

func (compaction) PreStep(h *sdk.Host, req *sdk.CompactionRequest) (*sdk.CompactionResult, error) {
	if cfg.Every > 0 && req.Turn%int64(cfg.Every) == 0 {
		if cfg.Hang {
			for {
			}
		}
		return nil, errors.New("flaky: turn " + strconv.FormatInt(req.Turn, 10) + " is one of the bad ones")
	}
	return nil, nil
}

func (compaction) Manual(h *sdk.Host, req *sdk.CompactionRequest) (*sdk.CompactionResult, error) {
	return nil, nil
}

func (compaction) Overflow(h *sdk.Host, req *sdk.CompactionRequest) (*sdk.CompactionResult, error) {
	return nil, nil
}

// Plugin is the plugin under the name a test loads it by.
func Plugin(name string) sdk.Plugin {
	return sdk.Plugin{Name: name, Version: "1.0.0", Configure: configure, Compaction: compaction{}}
}
