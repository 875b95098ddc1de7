//go:build !linux

package jsonl

func publishNoReplace(tmp, path string) error { return linkNoReplace(tmp, path) }
