// Package config is Weir's configuration and logging layer: one model of
// the configuration (Config, with its defaults in Default), loaded from
// four sources, validated as a whole, and able to say where every value
// came from.
//
// # Model
//
// A configuration names model routes (models, with model naming the
// default one), the system prompt's sections (prompt, with per-route
// overrides), the provider plugins (plugins: the first-party system-prompt,
// compaction-basic and token-meter, enabled by default, plus any .wasm
// plugin), the plugin sandbox's limits (sandbox), where sessions live
// (sessions.dir) and how the host logs (log). The koanf tags of the
// structs are the key names of weir.yaml; docs/config.md has the table.
//
// # Sources and precedence
//
// Load reads, lowest first, each overriding the ones before it key by key:
//
//  1. the defaults in code (Default);
//  2. a YAML file: Options.File when given (it must exist), else the first
//     of ./weir.yaml (in Options.Dir) and os.UserConfigDir()/weir/weir.yaml
//     that exists (none is fine);
//  3. environment variables starting with WEIR_ (see below);
//  4. command-line flags the caller reports as explicitly set
//     (Options.Flags; FlagsFrom builds them from a flag.FlagSet).
//
// Maps merge entry by entry (a file may change one field of the default
// "deepseek" route). A list replaces the lower one whole (a file's
// prompt.sections is the whole prompt), except plugins, whose entries
// merge by name: an entry naming a first-party plugin changes its fields,
// a new name adds a plugin after the first-party ones, in the file's
// order. Relative paths in the file (plugin paths, section files) start at
// the file's directory; from the environment or flags, at the working
// directory.
//
// # Environment variables
//
// Below WEIR_, a double underscore always separates levels; inside a part,
// a single underscore also separates fixed keys, and key names match
// ignoring case. So WEIR_LOG_LEVEL and WEIR_LOG__LEVEL set log.level,
// WEIR_SESSIONS_DIR sets sessions.dir, WEIR_SANDBOX_MEMORYLIMITMIB (or
// WEIR_SANDBOX_MEMORY_LIMIT_MIB) sets sandbox.memoryLimitMiB. The name of a
// map entry runs to the next double underscore and matches an existing
// entry ignoring case and '-' versus '_':
// WEIR_MODELS__DEEPSEEK__BASEURL sets models.deepseek.baseURL and
// WEIR_PLUGINS__TOKEN_METER__ENABLED=false disables the token-meter
// plugin. Values are parsed for the key's kind (numbers, true/false,
// durations such as 2s, JSON objects for plugin configuration). An empty
// variable counts as unset. Lists other than plugins cannot be set from
// the environment. A variable whose first word names no top-level key
// (WEIR_LONG, WEIR_WAZERO_CACHE, ...) belongs to another part of Weir and
// is ignored; one that starts like a key but matches none is an error.
//
// # Validation
//
// Load reports every problem it finds together, as Errors: unknown keys
// (with the closest valid key), wrong types, missing required values, a
// default route that is not configured, impossible token budgets, unknown
// tokenizer, role, prompt-update mode or log settings, plugin paths that do
// not exist or are not WebAssembly modules, unreadable section files,
// duplicate section keys or plugin names, and an invalid compaction-basic
// configuration. Each Problem names the key (as the file spells it when
// the value came from the file), says what is wrong and what to do, and
// names the source. Section files are read here, so plugins, which get no
// filesystem, receive the text as data.
//
// # Sources
//
// Sources lists every leaf key of the effective configuration with its
// value and the source that set it: default, the file (with the key as the
// file spells it when it differs), the environment variable, or the flag.
//
// # Logging
//
// NewLogger builds the hclog logger from the log section, writing to the
// given writer; PluginLogger derives a plugin's named sub-logger.
package config
