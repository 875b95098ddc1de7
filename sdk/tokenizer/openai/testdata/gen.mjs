// Regenerates the OpenAI oracle data for the Go tests of package openai.
//
// Usage (see ../README.md):
//   ORACLE_DIR=/tmp/dsv3-oracle node sdk/tokenizer/openai/testdata/gen.mjs
//
// ORACLE_DIR is a folder where `npm install tiktoken@1.0.22` was run (the
// official tiktoken compiled to WebAssembly). The inputs are those of
// ../../testdata/oracle/corpus.jsonl.gz (its "t" field); writes
// expected.jsonl.gz next to this script, one line per corpus line:
//   {"o200k_base": [...], "cl100k_base": [...]}
// encoded with encode_ordinary (special-token text counts as plain text).

import { createRequire } from "node:module";
import { readFileSync, writeFileSync } from "node:fs";
import { gunzipSync, gzipSync } from "node:zlib";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const oracleDir = process.env.ORACLE_DIR;
if (!oracleDir) {
  console.error("ORACLE_DIR must name the folder holding node_modules/tiktoken");
  process.exit(2);
}
const pkg = JSON.parse(readFileSync(path.join(path.resolve(oracleDir), "node_modules", "tiktoken", "package.json"), "utf8"));
if (pkg.version !== "1.0.22") {
  console.error(`expected tiktoken 1.0.22, found ${pkg.version}`);
  process.exit(2);
}
const require = createRequire(path.join(path.resolve(oracleDir), "package.json"));
const { get_encoding } = require("tiktoken");
const encodings = ["o200k_base", "cl100k_base"].map((n) => [n, get_encoding(n)]);

const corpus = gunzipSync(readFileSync(path.join(here, "..", "..", "testdata", "oracle", "corpus.jsonl.gz"))).toString("utf8");
const out = [];
for (const line of corpus.split("\n")) {
  if (!line) continue;
  const { t } = JSON.parse(line);
  const row = {};
  for (const [name, enc] of encodings) row[name] = Array.from(enc.encode_ordinary(t));
  out.push(JSON.stringify(row));
}
writeFileSync(path.join(here, "expected.jsonl.gz"), gzipSync(out.join("\n") + "\n", { level: 9 }));
console.log(`wrote ${out.length} cases`);
