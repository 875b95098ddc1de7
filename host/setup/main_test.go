package setup_test

import "github.com/weirhost/weir/sdk/plugintest"

// cacheDir is where the tests keep compiled plugin modules: the cache the
// test runs share ($WEIR_WAZERO_CACHE, else the user cache folder).
var cacheDir = plugintest.CacheDir()
