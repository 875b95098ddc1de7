package config_test

import "flag"

func newFlagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.Int64("max-tokens", 8192, "")
	fs.String("base-url", "https://api.deepseek.com", "")
	fs.Bool("verbose", false, "")
	return fs
}
