// Package offline holds the scripts of Weir's offline model: replies the
// scripted model plays so that a whole session runs with no network.
//
// demo.json drives "host demo"; tour.json is the small script of the
// default offline route, "host run --route offline". Both are embedded in
// the host binary, so neither needs this folder at run time.
package offline

import _ "embed"

// Demo is the script "host demo" plays.
//
//go:embed demo.json
var Demo []byte

// TourPath is where the tour script lives in the repository, as the
// default offline route names it.
const TourPath = "examples/offline/tour.json"

// Tour is the script of the default offline route, shipped in the binary
// so that the route works from any folder.
//
//go:embed tour.json
var Tour []byte
