// The AssemblyScript SDK of the Weir plugin ABI, version 1 (docs/abi.md).
//
// A plugin is an entry file that defines a subclass of Plugin, registers
// an instance at top level, and re-exports the ABI's exports:
//
//   import { Plugin, register, RenderRequest } from "../../weir";
//   export { weir_abi_version, weir_input, weir_call } from "../../weir";
//
//   class Shouty extends Plugin {
//     renderPrompt(req: RenderRequest): string { ... }
//   }
//   register(new Shouty("shouty", "0.1.0"));
//
// Build with the flags of README.md (--exportStart _initialize turns the
// top level into the reactor's _initialize; --use abort=... keeps the
// module free of the "env" imports the host refuses).
//
// Requests arrive as protobuf frames in a grow-only buffer outside the
// garbage-collected heap; results are framed in another such buffer. Text
// crosses the boundary as UTF-8 and is a UTF-16 string inside the plugin.
// AssemblyScript has no exceptions: a provider method reports a failure by
// calling fail(reason) and returning anything; an abort (a failed
// assertion, an out-of-bounds array access) writes its message to stderr
// and traps, and the host replaces the instance.

export const ABI_MAJOR: i32 = 1;
export const ABI_MINOR: u32 = 2;
export const SDK_VERSION = "weir-assemblyscript/0.1.0";

// Response.status values.
export const STATUS_OK: u32 = 0;
export const STATUS_PLUGIN_ERROR: u32 = 1;
export const STATUS_BAD_REQUEST: u32 = 2;
export const STATUS_PANIC: u32 = 3;
export const STATUS_UNSUPPORTED: u32 = 4;

// Provider kinds.
export const KIND_SYSTEM_PROMPT: u32 = 1;
export const KIND_COMPACTION: u32 = 2;
export const KIND_TOKEN_METER: u32 = 3;

// Methods.
export const METHOD_INIT: u32 = 1;
export const METHOD_DESCRIBE: u32 = 2;
export const METHOD_PROMPT_RENDER: u32 = 16;
export const METHOD_COMPACTION_PRESTEP: u32 = 32;
export const METHOD_COMPACTION_MANUAL: u32 = 33;
export const METHOD_COMPACTION_OVERFLOW: u32 = 34;
// Minor 2, optional: the host calls it only on a plugin whose
// compactionRegion() is true.
export const METHOD_COMPACTION_REGION: u32 = 35;
export const METHOD_METER_OBSERVE: u32 = 48;
export const METHOD_METER_MEASURE: u32 = 49;

// Host import status codes (docs/abi.md 5.1).
export const HOST_NOT_GRANTED: i32 = -1;
export const HOST_NOT_FOUND: i32 = -2;
export const HOST_BAD_ARGUMENT: i32 = -3;
export const HOST_FAILED: i32 = -4;
export const HOST_CANCELLED: i32 = -5;
export const HOST_MALFORMED: i32 = -101; // SDK: the answer did not decode

// ------------------------------------------------------------ raw buffers

// Buf is a growable byte buffer outside the garbage-collected heap.
export class Buf {
  ptr: usize = 0;
  len: u32 = 0;
  cap: u32 = 0;

  reserve(n: u32): void {
    if (this.cap - this.len >= n) return;
    let c: u32 = this.cap ? this.cap * 2 : 256;
    while (c - this.len < n) c *= 2;
    this.ptr = this.ptr ? heap.realloc(this.ptr, c) : heap.alloc(c);
    this.cap = c;
  }

  byte(b: u8): void {
    this.reserve(1);
    store<u8>(this.ptr + this.len, b);
    this.len++;
  }

  raw(p: usize, n: u32): void {
    if (n == 0) return;
    this.reserve(n);
    memory.copy(this.ptr + this.len, p, n);
    this.len += n;
  }

  // utf8 appends s encoded as UTF-8.
  utf8(s: string): void {
    const n = <u32>String.UTF8.byteLength(s);
    this.reserve(n);
    String.UTF8.encodeUnsafe(changetype<usize>(s), s.length, this.ptr + this.len);
    this.len += n;
  }

  varint(v: u64): void {
    while (v >= 0x80) {
      this.byte(<u8>(v | 0x80));
      v >>= 7;
    }
    this.byte(<u8>v);
  }

  tag(field: u32, wireType: u32): void {
    this.varint((<u64>field << 3) | wireType);
  }

  // uint writes a varint field, skipping 0 unless always.
  uint(field: u32, v: u64, always: bool = false): void {
    if (v == 0 && !always) return;
    this.tag(field, WIRE_VARINT);
    this.varint(v);
  }

  // bytesField writes a length-delimited field from raw memory.
  bytesField(field: u32, p: usize, n: u32): void {
    this.tag(field, WIRE_LEN);
    this.varint(n);
    this.raw(p, n);
  }

  // str writes a string field (even when empty).
  str(field: u32, s: string): void {
    this.tag(field, WIRE_LEN);
    this.varint(<u64>String.UTF8.byteLength(s));
    this.utf8(s);
  }

  blob(field: u32, b: Uint8Array): void {
    this.bytesField(field, b.dataStart, <u32>b.length);
  }

  // begin opens a sub-message; end writes its length in front of it.
  begin(field: u32): u32 {
    this.tag(field, WIRE_LEN);
    this.reserve(5);
    this.len += 5;
    return this.len;
  }

  end(mark: u32): void {
    const n = this.len - mark;
    let k: u32 = 0;
    let v = n;
    const start = this.ptr + mark - 5;
    while (v >= 0x80) {
      store<u8>(start + k, <u8>(v | 0x80));
      k++;
      v >>= 7;
    }
    store<u8>(start + k, <u8>v);
    k++;
    memory.copy(start + k, this.ptr + mark, n);
    this.len -= 5 - k;
  }

  toString(): string {
    return String.UTF8.decodeUnsafe(this.ptr, this.len);
  }
}

export const WIRE_VARINT: u32 = 0;
export const WIRE_I64: u32 = 1;
export const WIRE_LEN: u32 = 2;
export const WIRE_I32: u32 = 5;

// Reader walks the fields of one protobuf message in raw memory.
export class Reader {
  p: usize;
  end: usize;
  err: bool = false;
  // the last field read
  num: u32 = 0;
  wireType: u32 = 0;
  u: u64 = 0;
  sp: usize = 0;
  sn: u32 = 0;

  constructor(p: usize, n: u32) {
    this.p = p;
    this.end = p + n;
  }

  private varint(): bool {
    let x: u64 = 0;
    for (let shift: u64 = 0; shift < 70; shift += 7) {
      if (this.p >= this.end) return false;
      const c = load<u8>(this.p++);
      x |= (<u64>(c & 0x7f)) << shift;
      if (c < 0x80) {
        this.u = x;
        return true;
      }
    }
    return false;
  }

  // next reads the next field; false at the end or on malformed input
  // (err set).
  next(): bool {
    if (this.err || this.p >= this.end) return false;
    if (!this.varint() || (this.u >> 3) == 0 || (this.u >> 3) > 0x1fffffff) return this.bad();
    this.num = <u32>(this.u >> 3);
    this.wireType = <u32>(this.u & 7);
    this.u = 0;
    this.sp = 0;
    this.sn = 0;
    if (this.wireType == WIRE_VARINT) return this.varint() || this.bad();
    if (this.wireType == WIRE_I64 || this.wireType == WIRE_I32) {
      const n: usize = this.wireType == WIRE_I64 ? 8 : 4;
      if (this.end - this.p < n) return this.bad();
      for (let i: usize = 0; i < n; i++) this.u |= (<u64>load<u8>(this.p + i)) << (8 * i);
      this.p += n;
      return true;
    }
    if (this.wireType == WIRE_LEN) {
      if (!this.varint() || this.u > <u64>(this.end - this.p)) return this.bad();
      this.sp = this.p;
      this.sn = <u32>this.u;
      this.p += this.sn;
      return true;
    }
    return this.bad();
  }

  private bad(): bool {
    this.err = true;
    return false;
  }

  // is checks a known field's wire type; a mismatch is malformed input.
  is(wireType: u32): bool {
    if (this.wireType != wireType) this.err = true;
    return !this.err;
  }

  string(): string {
    return String.UTF8.decodeUnsafe(this.sp, this.sn);
  }

  bytes(): Uint8Array {
    const b = new Uint8Array(this.sn);
    memory.copy(b.dataStart, this.sp, this.sn);
    return b;
  }

  sub(): Reader {
    return new Reader(this.sp, this.sn);
  }
}

// ------------------------------------------------------------ messages

export class Route {
  provider: string = "";
  model: string = "";
}

export class Section {
  key: string = "";
  text: string = "";
}

export class KeyValue {
  key: string = "";
  value: string = "";
}

export class RenderRequest {
  sections: Section[] = [];
  route: Route = new Route();
  hostData: KeyValue[] = [];

  // value returns the first host data value of key ("" when absent).
  value(key: string): string {
    for (let i = 0; i < this.hostData.length; i++) {
      if (this.hostData[i].key == key) return this.hostData[i].value;
    }
    return "";
  }
}

export class CompactionRequest {
  turn: i64 = 0; // open turn, 0 when none
  step: i64 = 0; // open step, 0 when none
  route: Route = new Route();
  contextWindow: i64 = 0; // 0: unknown
  defaultMaxTokens: i64 = 0; // 0: unknown
  commandId: string = "";
  failureCode: string = "";
  failureMessage: string = "";
  state: Uint8Array = new Uint8Array(0); // the plugin's stored state blob
  // compaction.region (minor 2): the first and last seq of the current
  // surface nodes to compact, inclusive; 0 for the other methods.
  regionStartSeq: i64 = 0;
  regionEndSeq: i64 = 0;
}

export enum Intent {
  None = 0, // a log-only event
  Append = 1,
  Replace = 2,
}

export class Proposal {
  type: string = ""; // "family/name"
  data: string = ""; // the event's data, JSON
  intent: Intent = Intent.None;
  startSeq: i64 = 0;
  endSeq: i64 = 0;
  sources: i64[] | null = null; // null: no sourceEventSeqs key
  ignorable: bool = false;
}

export class CompactionResult {
  proposals: Proposal[] = [];
  state: Uint8Array | null = null; // null: keep the stored state
  // idleBelowTokens (minor 2, compaction.prestep only), sent when >= 0:
  // the plugin has nothing to do before a step while the measured total
  // stays below this many tokens, the latest request header, route and
  // limits are those of this call and its state is unchanged; the host may
  // skip compaction.prestep while that holds. -1: no promise.
  idleBelowTokens: i64 = -1;
}

// ------------------------------------------------------------ the plugin

// Plugin is the base class of a plugin; override the methods of the
// provider kinds it implements and list them in kinds().
export abstract class Plugin {
  constructor(public name: string, public version: string) {}

  // kinds lists the provider kinds (KIND_*) the plugin implements.
  abstract kinds(): u32[];

  // events lists the ignorable event types the plugin may propose.
  events(): string[] {
    return [];
  }

  // renderOnChange (describe, minor 2): renderPrompt is a pure function of
  // its request and the configuration, so the host may reuse the last
  // prompt while the request is byte for byte the last one.
  renderOnChange(): bool {
    return false;
  }

  // warmState (describe, minor 2): the meter understands state keys
  // (ObserveRequest/MeasureRequest state_key and the rest).
  warmState(): bool {
    return false;
  }

  // compactionRegion (describe methods, minor 2): compact also handles
  // METHOD_COMPACTION_REGION, with req.regionStartSeq and req.regionEndSeq.
  compactionRegion(): bool {
    return false;
  }

  // configure gets the plugin configuration JSON ("" when none); call
  // fail() to refuse it.
  configure(config: string): void {}

  renderPrompt(req: RenderRequest): string {
    fail("not a system-prompt provider");
    return "";
  }

  // meter handles meter.observe and meter.measure (METHOD_METER_*) at the
  // wire level: request reads the encoded ObserveRequest or MeasureRequest,
  // and the method appends the encoded ObserveResult or Measurement to
  // result. List KIND_TOKEN_METER in kinds() to be a token meter.
  meter(method: u32, request: Reader, result: Buf): void {
    fail("not a token-meter provider");
  }

  // compact handles the compaction methods (METHOD_COMPACTION_*; REGION
  // only when compactionRegion() is true).
  // Return null to propose nothing and keep the state.
  compact(method: u32, req: CompactionRequest): CompactionResult | null {
    fail("not a compaction provider");
    return null;
  }
}

let plugin: Plugin | null = null;
let failure: string | null = null;
let configuredName = "";
let inited = false;

// register sets the plugin; call it at the entry file's top level.
export function register(p: Plugin): void {
  plugin = p;
}

// fail records why the current call failed; the SDK answers the call with
// a plugin error once the method returns.
export function fail(reason: string): void {
  failure = reason;
}

// pluginName is the name the host configured the plugin under (from init;
// it may differ from Plugin.name). Messages the plugin proposes must carry
// the source {"kind":"plugin","plugin":<this name>}.
export function pluginName(): string {
  return configuredName;
}

// ------------------------------------------------------------ exports

const input = new Buf();
const out = new Buf();
const result = new Buf();

export function weir_abi_version(): i32 {
  return ABI_MAJOR;
}

export function weir_input(size: u32): usize {
  if (size > input.cap || input.cap == 0) {
    let want = input.cap * 2;
    if (want < size) want = size;
    if (want < 4096) want = 4096;
    if (input.ptr) heap.free(input.ptr); // dropped: no copy needed
    input.ptr = heap.alloc(want);
    input.cap = want;
  }
  return input.ptr;
}

function frame(): u64 {
  if (out.len == 0) return 0;
  return ((<u64>out.ptr) << 32) | <u64>out.len;
}

function answer(status: u32, msg: string): u64 {
  out.len = 0;
  out.uint(1, status, true);
  out.str(2, msg);
  return frame();
}

function ok(): u64 {
  out.len = 0;
  if (result.len) out.bytesField(3, result.ptr, result.len);
  return frame();
}

// finish frames a method's outcome: its failure, else the result.
function finish(): u64 {
  const f = failure;
  if (f !== null) return answer(STATUS_PLUGIN_ERROR, f);
  return ok();
}

function provides(p: Plugin, kind: u32): bool {
  return p.kinds().includes(kind);
}

export function weir_call(method: u32, n: u32): u64 {
  result.len = 0;
  failure = null;
  const p = plugin;
  if (p === null) return answer(STATUS_UNSUPPORTED, "no plugin registered: call register() at the entry file's top level");
  if (n > input.cap) return answer(STATUS_BAD_REQUEST, "input length exceeds the buffer weir_input returned");
  if (method == METHOD_INIT) return init(p, n);
  if (method == METHOD_DESCRIBE) return describe(p);
  if (!inited) return answer(STATUS_BAD_REQUEST, "provider method called before init");
  if (method == METHOD_PROMPT_RENDER) {
    if (!provides(p, KIND_SYSTEM_PROMPT)) return answer(STATUS_UNSUPPORTED, "plugin is not a system-prompt provider");
    const req = decodeRender(input.ptr, n);
    if (req === null) return answer(STATUS_BAD_REQUEST, "prompt.render: the RenderRequest did not decode");
    const prompt = p.renderPrompt(req);
    if (prompt.length) result.str(1, prompt);
    return finish();
  }
  if (method >= METHOD_COMPACTION_PRESTEP && method <= METHOD_COMPACTION_REGION) {
    if (method == METHOD_COMPACTION_REGION && !(provides(p, KIND_COMPACTION) && p.compactionRegion())) {
      return answer(STATUS_UNSUPPORTED, "compaction.region: the plugin does not declare it");
    }
    if (!provides(p, KIND_COMPACTION)) return answer(STATUS_UNSUPPORTED, "plugin is not a compaction provider");
    const req = decodeCompaction(input.ptr, n);
    if (req === null) return answer(STATUS_BAD_REQUEST, "compaction: the CompactionRequest did not decode");
    const res = p.compact(method, req);
    if (res !== null && failure === null) {
      if (res.proposals.length > 1024) return answer(STATUS_PLUGIN_ERROR, "more than 1024 proposals");
      encodeCompactionResult(res);
    }
    return finish();
  }
  if (method == METHOD_METER_OBSERVE || method == METHOD_METER_MEASURE) {
    if (!provides(p, KIND_TOKEN_METER)) return answer(STATUS_UNSUPPORTED, "plugin is not a token-meter provider");
    p.meter(method, new Reader(input.ptr, n), result);
    return finish();
  }
  return answer(STATUS_UNSUPPORTED, "unknown method " + method.toString());
}

function init(p: Plugin, n: u32): u64 {
  const r = new Reader(input.ptr, n);
  let name = "";
  let config = "";
  let major: u64 = 0;
  while (r.next()) {
    if (r.num == 1 && r.is(WIRE_LEN)) name = r.string();
    else if (r.num == 2 && r.is(WIRE_LEN)) config = r.string();
    else if (r.num == 3 && r.is(WIRE_VARINT)) major = r.u;
  }
  if (r.err) return answer(STATUS_BAD_REQUEST, "init: the InitRequest did not decode");
  if (major != <u64>ABI_MAJOR) {
    return answer(STATUS_BAD_REQUEST, "host speaks ABI major " + major.toString() + ", plugin was built for 1");
  }
  configuredName = name;
  p.configure(config);
  const f = failure;
  if (f !== null) return answer(STATUS_PLUGIN_ERROR, f);
  inited = true;
  return ok();
}

function describe(p: Plugin): u64 {
  result.str(1, p.name);
  result.str(2, p.version);
  const kinds = p.kinds();
  if (kinds.length) {
    const m = result.begin(3); // packed
    for (let i = 0; i < kinds.length; i++) result.varint(kinds[i]);
    result.end(m);
  }
  result.uint(4, ABI_MINOR);
  result.str(5, SDK_VERSION);
  const events = p.events();
  for (let i = 0; i < events.length; i++) result.str(6, events[i]);
  result.uint(7, p.renderOnChange() ? 1 : 0);
  result.uint(8, p.warmState() ? 1 : 0);
  if (provides(p, KIND_COMPACTION) && p.compactionRegion()) {
    const m = result.begin(9); // packed
    result.varint(METHOD_COMPACTION_REGION);
    result.end(m);
  }
  return ok();
}

function decodePair(r: Reader): string[] | null {
  const s = r.sub();
  let a = "";
  let b = "";
  while (s.next()) {
    if (s.num == 1 && s.is(WIRE_LEN)) a = s.string();
    else if (s.num == 2 && s.is(WIRE_LEN)) b = s.string();
  }
  if (s.err) return null;
  return [a, b];
}

function decodeRoute(r: Reader): Route | null {
  const pair = decodePair(r);
  if (pair === null) return null;
  const rt = new Route();
  rt.provider = pair[0];
  rt.model = pair[1];
  return rt;
}

function decodeRender(p: usize, n: u32): RenderRequest | null {
  const req = new RenderRequest();
  const r = new Reader(p, n);
  while (r.next()) {
    if (r.num == 1 && r.is(WIRE_LEN)) {
      const pair = decodePair(r);
      if (pair === null) return null;
      const s = new Section();
      s.key = pair[0];
      s.text = pair[1];
      req.sections.push(s);
    } else if (r.num == 2 && r.is(WIRE_LEN)) {
      const rt = decodeRoute(r);
      if (rt === null) return null;
      req.route = rt;
    } else if (r.num == 3 && r.is(WIRE_LEN)) {
      const pair = decodePair(r);
      if (pair === null) return null;
      const kv = new KeyValue();
      kv.key = pair[0];
      kv.value = pair[1];
      req.hostData.push(kv);
    }
  }
  return r.err ? null : req;
}

function decodeCompaction(p: usize, n: u32): CompactionRequest | null {
  const req = new CompactionRequest();
  const r = new Reader(p, n);
  while (r.next()) {
    if (r.num == 1 && r.is(WIRE_VARINT)) req.turn = <i64>r.u;
    else if (r.num == 2 && r.is(WIRE_VARINT)) req.step = <i64>r.u;
    else if (r.num == 3 && r.is(WIRE_LEN)) {
      const rt = decodeRoute(r);
      if (rt === null) return null;
      req.route = rt;
    } else if (r.num == 4 && r.is(WIRE_LEN)) {
      const l = r.sub();
      while (l.next()) {
        if (l.num == 1 && l.is(WIRE_VARINT)) req.contextWindow = <i64>l.u;
        else if (l.num == 2 && l.is(WIRE_VARINT)) req.defaultMaxTokens = <i64>l.u;
      }
      if (l.err) return null;
    } else if (r.num == 5 && r.is(WIRE_LEN)) req.commandId = r.string();
    else if (r.num == 6 && r.is(WIRE_LEN)) {
      const pair = decodePair(r);
      if (pair === null) return null;
      req.failureCode = pair[0];
      req.failureMessage = pair[1];
    } else if (r.num == 7 && r.is(WIRE_LEN)) req.state = r.bytes();
    else if (r.num == 8 && r.is(WIRE_VARINT)) req.regionStartSeq = <i64>r.u;
    else if (r.num == 9 && r.is(WIRE_VARINT)) req.regionEndSeq = <i64>r.u;
  }
  return r.err ? null : req;
}

function encodeCompactionResult(res: CompactionResult): void {
  for (let i = 0; i < res.proposals.length; i++) {
    const p = res.proposals[i];
    const m = result.begin(1);
    result.str(1, p.type);
    if (p.data.length) result.str(2, p.data);
    if (p.intent == Intent.Append) {
      result.tag(3, WIRE_LEN);
      result.varint(0);
    } else if (p.intent == Intent.Replace) {
      const rm = result.begin(4);
      result.uint(1, <u64>p.startSeq);
      result.uint(2, <u64>p.endSeq);
      result.end(rm);
    }
    const sources = p.sources;
    if (sources !== null) {
      const sm = result.begin(5);
      if (sources.length) {
        const pm = result.begin(1); // packed
        for (let j = 0; j < sources.length; j++) result.varint(<u64>sources[j]);
        result.end(pm);
      }
      result.end(sm);
    }
    result.uint(6, p.ignorable ? 1 : 0);
    result.end(m);
  }
  const state = res.state;
  if (state !== null) result.blob(2, state); // optional: present even when empty
  if (res.idleBelowTokens >= 0) {
    result.tag(3, WIRE_VARINT); // optional: present even when 0
    result.varint(<u64>res.idleBelowTokens);
  }
}

// ------------------------------------------------------------ host imports

// @ts-ignore: decorator
@external("weir", "surface_nodes")
declare function imp_surface_nodes(buf: usize, limit: u32): i32;
// @ts-ignore: decorator
@external("weir", "message")
declare function imp_message(seq: i64, buf: usize, limit: u32): i32;
// @ts-ignore: decorator
@external("weir", "event")
declare function imp_event(seq: i64, buf: usize, limit: u32): i32;
// @ts-ignore: decorator
@external("weir", "generations")
declare function imp_generations(buf: usize, limit: u32): i32;
// @ts-ignore: decorator
@external("weir", "header")
declare function imp_header(buf: usize, limit: u32): i32;
// @ts-ignore: decorator
@external("weir", "measure")
declare function imp_measure(buf: usize, limit: u32): i32;
// @ts-ignore: decorator
@external("weir", "summarize")
declare function imp_summarize(req: usize, reqLen: u32, buf: usize, limit: u32): i32;
// @ts-ignore: decorator
@external("weir", "count_tokens")
declare function imp_count_tokens(name: usize, nameLen: u32, text: usize, textLen: u32): i64;
// @ts-ignore: decorator
@external("weir", "last_error")
declare function imp_last_error(buf: usize, limit: u32): i32;

const answerBuf = new Buf();
const sumReq = new Buf();
let hostCode: i32 = 0;
let hostReason = "";
let hostImport = "";

// hostError describes the last failed import call: "summarize: not
// granted: <the host's reason>".
export function hostError(): string {
  let s = hostImport + ": " + hostCodeName(hostCode);
  if (hostReason.length) s += ": " + hostReason;
  return s;
}

// hostErrorCode is the code of the last failed import call.
export function hostErrorCode(): i32 {
  return hostCode;
}

export function hostCodeName(code: i32): string {
  switch (code) {
    case HOST_NOT_GRANTED: return "not granted";
    case HOST_NOT_FOUND: return "not found";
    case HOST_BAD_ARGUMENT: return "bad argument";
    case HOST_FAILED: return "host failed";
    case HOST_CANCELLED: return "cancelled";
    case HOST_MALFORMED: return "malformed answer";
  }
  return "code " + code.toString();
}

function noteError(imp: string, code: i32): void {
  hostImport = imp;
  hostCode = code;
  hostReason = "";
  if (code == HOST_MALFORMED) return;
  const b = new Buf();
  b.reserve(256);
  for (let i = 0; i < 2; i++) {
    const n = imp_last_error(b.ptr, b.cap);
    if (n <= 0) break;
    if (<u32>n <= b.cap) {
      b.len = <u32>n;
      hostReason = b.toString();
      break;
    }
    b.reserve(<u32>n);
  }
  heap.free(b.ptr);
}

const Q_SURFACE = 0;
const Q_MESSAGE = 1;
const Q_GENERATIONS = 2;
const Q_HEADER = 3;
const Q_MEASURE = 4;
const Q_SUMMARIZE = 5;
const Q_EVENT = 6;
let querySeq: i64 = 0;

function rawQuery(which: i32, buf: usize, limit: u32): i32 {
  switch (which) {
    case Q_SURFACE: return imp_surface_nodes(buf, limit);
    case Q_MESSAGE: return imp_message(querySeq, buf, limit);
    case Q_GENERATIONS: return imp_generations(buf, limit);
    case Q_HEADER: return imp_header(buf, limit);
    case Q_MEASURE: return imp_measure(buf, limit);
    case Q_EVENT: return imp_event(querySeq, buf, limit);
  }
  return imp_summarize(sumReq.ptr, sumReq.len, buf, limit);
}

// query runs the (buf, limit) protocol; the answer is in answerBuf.
function query(imp: string, which: i32): bool {
  for (let attempt = 0; attempt < 4; attempt++) {
    const n = rawQuery(which, answerBuf.ptr, answerBuf.cap);
    if (n < 0) {
      noteError(imp, n);
      return false;
    }
    if (<u32>n <= answerBuf.cap) {
      answerBuf.len = <u32>n;
      return true;
    }
    answerBuf.len = 0;
    answerBuf.reserve(<u32>n);
  }
  hostImport = imp;
  hostCode = HOST_FAILED;
  hostReason = "the answer's size kept changing between attempts";
  return false;
}

function malformed(imp: string): void {
  hostImport = imp;
  hostCode = HOST_MALFORMED;
  hostReason = "the host's answer did not decode";
}

export class Node {
  seq: i64 = 0;
  type: string = "";
  role: string = "";
  size: i64 = 0; // bytes of the node's message JSON
  hasTokens: bool = false;
  tokens: i64 = 0;
}

// surfaceNodes returns the current surface; null on failure (hostError()).
export function surfaceNodes(): Node[] | null {
  if (!query("surface_nodes", Q_SURFACE)) return null;
  const nodes: Node[] = [];
  const r = new Reader(answerBuf.ptr, answerBuf.len);
  while (r.next()) {
    if (r.num != 1 || !r.is(WIRE_LEN)) continue;
    const nd = new Node();
    const s = r.sub();
    while (s.next()) {
      if (s.num == 1 && s.is(WIRE_VARINT)) nd.seq = <i64>s.u;
      else if (s.num == 2 && s.is(WIRE_LEN)) nd.type = s.string();
      else if (s.num == 3 && s.is(WIRE_LEN)) nd.role = s.string();
      else if (s.num == 4 && s.is(WIRE_VARINT)) nd.size = <i64>s.u;
      else if (s.num == 6 && s.is(WIRE_VARINT)) {
        nd.hasTokens = true;
        nd.tokens = <i64>s.u;
      }
    }
    if (s.err) r.err = true;
    nodes.push(nd);
  }
  if (r.err) {
    malformed("surface_nodes");
    return null;
  }
  return nodes;
}

// message returns the message JSON of the surface node holding seq.
export function message(seq: i64): string | null {
  querySeq = seq;
  return query("message", Q_MESSAGE) ? answerBuf.toString() : null;
}

export class EventData {
  seq: i64 = 0;
  type: string = ""; // "family/name"
  data: string = ""; // the event's data member as stored, JSON
}

// event returns the committed event at seq, on the surface or not (minor
// 2), e.g. a tool result's turn and step in its data; null on failure
// (hostError(); not found past the end of the log).
export function event(seq: i64): EventData | null {
  querySeq = seq;
  if (!query("event", Q_EVENT)) return null;
  const e = new EventData();
  const r = new Reader(answerBuf.ptr, answerBuf.len);
  while (r.next()) {
    if (r.num == 1 && r.is(WIRE_VARINT)) e.seq = <i64>r.u;
    else if (r.num == 2 && r.is(WIRE_LEN)) e.type = r.string();
    else if (r.num == 3 && r.is(WIRE_LEN)) e.data = r.string();
  }
  if (r.err) {
    malformed("event");
    return null;
  }
  return e;
}

// header returns the current request header JSON.
export function header(): string | null {
  return query("header", Q_HEADER) ? answerBuf.toString() : null;
}

export class Generations {
  replace: i64 = 0;
  content: i64 = 0;
  logLength: i64 = 0; // the seq the next event will get
}

export function generations(): Generations | null {
  if (!query("generations", Q_GENERATIONS)) return null;
  const g = new Generations();
  const r = new Reader(answerBuf.ptr, answerBuf.len);
  while (r.next()) {
    if (r.num == 1 && r.is(WIRE_VARINT)) g.replace = <i64>r.u;
    else if (r.num == 2 && r.is(WIRE_VARINT)) g.content = <i64>r.u;
    else if (r.num == 3 && r.is(WIRE_VARINT)) g.logLength = <i64>r.u;
  }
  if (r.err) {
    malformed("generations");
    return null;
  }
  return g;
}

export class Measurement {
  totalTokens: i64 = 0;
  surfaceTokens: i64 = 0;
}

export function measure(): Measurement | null {
  if (!query("measure", Q_MEASURE)) return null;
  const m = new Measurement();
  const r = new Reader(answerBuf.ptr, answerBuf.len);
  while (r.next()) {
    if (r.num == 4 && r.is(WIRE_VARINT)) m.totalTokens = <i64>r.u;
    else if (r.num == 5 && r.is(WIRE_VARINT)) m.surfaceTokens = <i64>r.u;
  }
  if (r.err) {
    malformed("measure");
    return null;
  }
  return m;
}

export class SummarizeRequest {
  messages: string[] = []; // Message JSON values, in order
  tools: string = ""; // tools JSON array, may be empty
  instruction: string = "";
  route: Route = new Route(); // empty: the host's default
  maxTokens: i64 = 0; // 0: host default
}

// summarize runs the host's model call and returns the text blocks of its
// answer, concatenated; null on failure (hostError()).
export function summarize(req: SummarizeRequest): string | null {
  sumReq.len = 0;
  for (let i = 0; i < req.messages.length; i++) sumReq.str(1, req.messages[i]);
  if (req.tools.length) sumReq.str(2, req.tools);
  if (req.instruction.length) sumReq.str(3, req.instruction);
  if (req.route.provider.length || req.route.model.length) {
    const m = sumReq.begin(4);
    if (req.route.provider.length) sumReq.str(1, req.route.provider);
    if (req.route.model.length) sumReq.str(2, req.route.model);
    sumReq.end(m);
  }
  sumReq.uint(5, <u64>req.maxTokens);
  if (!query("summarize", Q_SUMMARIZE)) return null;
  const text = new Buf();
  const r = new Reader(answerBuf.ptr, answerBuf.len);
  while (r.next()) {
    if (r.num == 1 && r.is(WIRE_LEN)) text.raw(r.sp, r.sn);
  }
  const s = text.toString();
  if (text.ptr) heap.free(text.ptr);
  if (r.err) {
    malformed("summarize");
    return null;
  }
  return s;
}

// countTokens counts text's tokens with the host's tokenizer of that
// name; a negative result is a host code (hostError()).
export function countTokens(tokenizer: string, text: string): i64 {
  const a = new Buf();
  a.utf8(tokenizer);
  const b = new Buf();
  b.utf8(text);
  const n = imp_count_tokens(a.ptr, a.len, b.ptr, b.len);
  if (a.ptr) heap.free(a.ptr);
  if (b.ptr) heap.free(b.ptr);
  if (n < 0) noteError("count_tokens", <i32>n);
  return n;
}

// ------------------------------------------------------------ JSON helpers

// jsonQuote returns s as a quoted, escaped JSON string.
export function jsonQuote(s: string): string {
  let out = '"';
  let run = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x20 && c != 0x22 && c != 0x5c) continue;
    out += s.substring(run, i);
    run = i + 1;
    if (c == 0x22) out += '\\"';
    else if (c == 0x5c) out += "\\\\";
    else if (c == 0x0a) out += "\\n";
    else if (c == 0x0d) out += "\\r";
    else if (c == 0x09) out += "\\t";
    else out += "\\u00" + (c < 0x10 ? "0" : "") + c.toString(16);
  }
  return out + s.substring(run) + '"';
}

function skipWs(s: string, i: i32): i32 {
  while (i < s.length) {
    const c = s.charCodeAt(i);
    if (c != 0x20 && c != 0x09 && c != 0x0a && c != 0x0d) break;
    i++;
  }
  return i;
}

// skipString returns the index after the string starting at i (-1: open).
function skipString(s: string, i: i32): i32 {
  for (i++; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c == 0x5c) i++;
    else if (c == 0x22) return i + 1;
  }
  return -1;
}

function skipValue(s: string, i: i32): i32 {
  i = skipWs(s, i);
  if (i >= s.length) return -1;
  const c0 = s.charCodeAt(i);
  if (c0 == 0x22) return skipString(s, i);
  if (c0 == 0x7b || c0 == 0x5b) {
    let depth = 0;
    while (i < s.length) {
      const c = s.charCodeAt(i);
      if (c == 0x22) {
        i = skipString(s, i);
        if (i < 0) return -1;
        continue;
      }
      if (c == 0x7b || c == 0x5b) depth++;
      else if ((c == 0x7d || c == 0x5d) && --depth == 0) return i + 1;
      i++;
    }
    return -1;
  }
  while (i < s.length) {
    const c = s.charCodeAt(i);
    if (c == 0x2c || c == 0x7d || c == 0x5d || c == 0x20 || c == 0x0a || c == 0x09 || c == 0x0d) break;
    i++;
  }
  return i;
}

// JSONMember is the outcome of a lookup: found, and the raw value's range.
class JSONMember {
  bad: bool = false;
  at: i32 = -1;
}

function findMember(json: string, key: string): JSONMember {
  const m = new JSONMember();
  let i = skipWs(json, 0);
  if (i >= json.length || json.charCodeAt(i) != 0x7b) {
    m.bad = true;
    return m;
  }
  i = skipWs(json, i + 1);
  while (i < json.length && json.charCodeAt(i) == 0x22) {
    const kend = skipString(json, i);
    if (kend < 0) break;
    const match = json.substring(i + 1, kend - 1) == key;
    i = skipWs(json, kend);
    if (i >= json.length || json.charCodeAt(i) != 0x3a) break;
    i = skipWs(json, i + 1);
    if (match) {
      m.at = i;
      return m;
    }
    i = skipValue(json, i);
    if (i < 0) break;
    i = skipWs(json, i);
    if (i < json.length && json.charCodeAt(i) == 0x2c) i = skipWs(json, i + 1);
  }
  if (i < 0 || i >= json.length || json.charCodeAt(i) != 0x7d) m.bad = true;
  return m;
}

// JSONString is a lookup result: ok is false when the member is absent or
// not a string; bad when json is not an object.
export class JSONString {
  ok: bool = false;
  bad: bool = false;
  value: string = "";
}

// jsonString finds the string member key of the top-level object json and
// unescapes it.
export function jsonString(json: string, key: string): JSONString {
  const res = new JSONString();
  const m = findMember(json, key);
  res.bad = m.bad;
  if (m.at < 0 || json.charCodeAt(m.at) != 0x22) return res;
  let out = "";
  let i = m.at + 1;
  let run = i;
  while (i < json.length) {
    const c = json.charCodeAt(i);
    if (c == 0x22) {
      res.ok = true;
      res.value = out + json.substring(run, i);
      return res;
    }
    if (c != 0x5c) {
      i++;
      continue;
    }
    out += json.substring(run, i);
    if (i + 1 >= json.length) break;
    const e = json.charCodeAt(i + 1);
    i += 2;
    if (e == 0x6e) out += "\n";
    else if (e == 0x74) out += "\t";
    else if (e == 0x72) out += "\r";
    else if (e == 0x62) out += "\b";
    else if (e == 0x66) out += "\f";
    else if (e == 0x75) {
      if (i + 4 > json.length) break;
      const code = I32.parseInt(json.substring(i, i + 4), 16);
      if (isNaN(<f64>code)) break;
      out += String.fromCharCode(code); // surrogate halves pair up as UTF-16
      i += 4;
    } else out += String.fromCharCode(e);
    run = i;
  }
  res.bad = true;
  return res;
}

// JSONInt is a lookup result like JSONString's.
export class JSONInt {
  ok: bool = false;
  bad: bool = false;
  value: i64 = 0;
}

// jsonInt finds the integer member key of the top-level object json.
export function jsonInt(json: string, key: string): JSONInt {
  const res = new JSONInt();
  const m = findMember(json, key);
  res.bad = m.bad;
  if (m.at < 0) return res;
  let i = m.at;
  const neg = json.charCodeAt(i) == 0x2d;
  if (neg) i++;
  let v: i64 = 0;
  let digits = 0;
  while (i < json.length) {
    const c = json.charCodeAt(i);
    if (c < 0x30 || c > 0x39) break;
    if (v > 100000000000000000) {
      res.bad = true;
      return res;
    }
    v = v * 10 + (c - 0x30);
    digits++;
    i++;
  }
  if (digits == 0 || (i < json.length && (json.charCodeAt(i) == 0x2e || json.charCodeAt(i) == 0x65 || json.charCodeAt(i) == 0x45))) {
    res.bad = true;
    return res;
  }
  res.ok = true;
  res.value = neg ? -v : v;
  return res;
}

// ------------------------------------------------------------ abort

// @ts-ignore: decorator
@external("wasi_snapshot_preview1", "fd_write")
declare function fd_write(fd: u32, iovs: usize, iovsLen: u32, nwritten: usize): u16;

// weirAbort replaces AssemblyScript's env.abort import (the host allows no
// "env" module): it writes the message to stderr, which the host quotes in
// the trap's error, and traps. It allocates nothing from the managed heap.
export function weirAbort(msg: string | null, file: string | null, line: u32, column: u32): void {
  const scratch = heap.alloc(16);
  writeStderr(scratch, "abort: ");
  writeStderr(scratch, msg !== null ? msg : "(no message)");
  if (file !== null) {
    writeStderr(scratch, " at ");
    writeStderr(scratch, file);
  }
  writeStderr(scratch, "\n");
  unreachable();
}

// writeStderr writes s to stderr as UTF-8, one character at a time, with
// a 16-byte scratch area for the iovec and the character's bytes.
function writeStderr(scratch: usize, s: string): void {
  for (let i = 0; i < s.length; i++) {
    let c = <u32>s.charCodeAt(i);
    let n: u32 = 1;
    if (c < 0x80) {
      store<u8>(scratch + 12, <u8>c);
    } else if (c < 0x800) {
      store<u8>(scratch + 12, <u8>(0xc0 | (c >> 6)));
      store<u8>(scratch + 13, <u8>(0x80 | (c & 0x3f)));
      n = 2;
    } else {
      if (c >= 0xd800 && c < 0xe000) c = 0xfffd; // a lone or paired surrogate: replaced
      store<u8>(scratch + 12, <u8>(0xe0 | (c >> 12)));
      store<u8>(scratch + 13, <u8>(0x80 | ((c >> 6) & 0x3f)));
      store<u8>(scratch + 14, <u8>(0x80 | (c & 0x3f)));
      n = 3;
    }
    store<u32>(scratch, <u32>(scratch + 12));
    store<u32>(scratch + 4, n);
    fd_write(2, scratch, 1, scratch + 8);
  }
}
