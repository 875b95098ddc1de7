package wasmparse

import (
	"errors"
	"fmt"
)

// CodeLimits bound the code section of a module. A zero field is no limit.
type CodeLimits struct {
	MaxFunctions int // functions the module defines (imports not counted)
	MaxBodySize  int // bytes of one function body, its local declarations included
	MaxCodeSize  int // bytes of all function bodies together (without their size prefixes)
	MaxNesting   int // depth of nested block, loop, if, try and try_table in one function
	MaxControl   int // control instructions in one function (see CodeStats.MaxControl)
}

// CodeStats describes the code section: the largest values CheckCode met.
// Function indices are in the module's function index space (imported
// functions first), as tools such as wasm-objdump print them.
type CodeStats struct {
	Functions      int    // functions defined in the module
	CodeSize       int    // bytes of all function bodies (without their size prefixes)
	MaxBodySize    int    // bytes of the largest body
	MaxBodyFunc    uint32 // its function index
	MaxNesting     int    // deepest control nesting
	MaxNestingFunc uint32 // its function index
	// MaxControl is the largest number of control instructions in one
	// function: block, loop, if, else, try, try_table, catch, catch_all, br,
	// br_if, br_table, br_on_null and br_on_non_null, each of which starts a
	// basic block in the compiler.
	MaxControl     int
	MaxControlFunc uint32 // its function index
}

// LimitError is returned by CheckCode when the module exceeds a limit.
type LimitError struct {
	Rule    string // "function count", "function body size", "code size", "control nesting depth", "control instruction count"
	Value   uint64 // what the module has
	Limit   uint64
	Func    uint32 // function index, when HasFunc
	HasFunc bool
	Bytes   bool // Value and Limit are sizes in bytes
}

func (e *LimitError) Error() string {
	unit := ""
	if e.Bytes {
		unit = " bytes"
	}
	s := fmt.Sprintf("%s %d%s exceeds the limit %d%s", e.Rule, e.Value, unit, e.Limit, unit)
	if e.HasFunc {
		s += fmt.Sprintf(" (function %d)", e.Func)
	}
	return s
}

// UncheckableError is returned by CheckCode for a function body it cannot
// walk: an opcode outside the instruction sets it decodes, or a malformed
// body. Such a module is refused rather than compiled unchecked.
type UncheckableError struct {
	Func   uint32 // function index
	Offset int    // byte offset of the problem within the function body
	Reason string
}

func (e *UncheckableError) Error() string {
	return fmt.Sprintf("function %d cannot be pre-checked: %s at body offset %d", e.Func, e.Reason, e.Offset)
}

// CheckCode walks every function body of the code section once, in time
// linear in the size of the section, and returns the section's statistics,
// or a *LimitError naming the first limit exceeded, or an
// *UncheckableError. It decodes the instructions of WebAssembly 2.0 (with
// SIMD), threads, tail calls, exception handling and typed function
// references, enough to skip their immediates and follow control nesting;
// it does not validate types or indices (the compiler does).
//
// The limits on function count, body size and code size are checked before
// any body is walked, from the sizes the section declares.
func (m *Module) CheckCode(lim CodeLimits) (CodeStats, error) {
	var st CodeStats
	if m.code == nil {
		return st, nil
	}
	over := func(limit int, v int) bool { return limit > 0 && v > limit }
	r := reader{b: m.code}
	n := r.u32()
	if r.err != nil {
		return st, fmt.Errorf("code section: %w", r.err)
	}
	if over(lim.MaxFunctions, int(n)) {
		return st, &LimitError{Rule: "function count", Value: uint64(n), Limit: uint64(lim.MaxFunctions)}
	}
	// Sizes first: a module over a size limit is refused without walking
	// any body.
	bodies := make([][]byte, 0, min(n, 1<<16))
	for i := uint32(0); i < n; i++ {
		size := r.u32()
		body := r.take(size)
		if r.err != nil {
			return st, fmt.Errorf("code section: function %d: %w", m.importedFuncs+i, r.err)
		}
		bodies = append(bodies, body)
		st.CodeSize += len(body)
		if len(body) > st.MaxBodySize {
			st.MaxBodySize, st.MaxBodyFunc = len(body), m.importedFuncs+i
		}
	}
	st.Functions = int(n)
	if over(lim.MaxBodySize, st.MaxBodySize) {
		return st, &LimitError{Rule: "function body size", Value: uint64(st.MaxBodySize), Limit: uint64(lim.MaxBodySize),
			Func: st.MaxBodyFunc, HasFunc: true, Bytes: true}
	}
	if over(lim.MaxCodeSize, st.CodeSize) {
		return st, &LimitError{Rule: "code size", Value: uint64(st.CodeSize), Limit: uint64(lim.MaxCodeSize), Bytes: true}
	}
	for i, body := range bodies {
		fn := m.importedFuncs + uint32(i)
		depth, control, err := walkBody(body, fn)
		if err != nil {
			return st, err
		}
		if depth > st.MaxNesting {
			st.MaxNesting, st.MaxNestingFunc = depth, fn
		}
		if control > st.MaxControl {
			st.MaxControl, st.MaxControlFunc = control, fn
		}
		if over(lim.MaxNesting, depth) {
			return st, &LimitError{Rule: "control nesting depth", Value: uint64(depth), Limit: uint64(lim.MaxNesting),
				Func: fn, HasFunc: true}
		}
		if over(lim.MaxControl, control) {
			return st, &LimitError{Rule: "control instruction count", Value: uint64(control), Limit: uint64(lim.MaxControl),
				Func: fn, HasFunc: true}
		}
	}
	return st, nil
}

// walkBody returns the deepest control nesting of one function body and
// its number of control instructions. The function's own block is depth 0:
// a body with one block has depth 1.
func walkBody(body []byte, fn uint32) (depth, control int, err error) {
	r := reader{b: body}
	fail := func(reason string) (int, int, error) {
		return 0, 0, &UncheckableError{Func: fn, Offset: len(body) - len(r.b), Reason: reason}
	}
	// Local declarations: a vector of (count, value type).
	groups := r.u32()
	for g := uint32(0); g < groups && r.err == nil; g++ {
		r.u32()
		r.valueType()
	}
	deepest, at := 0, 0
	for r.err == nil {
		if len(r.b) == 0 {
			return fail("body ends before its final end")
		}
		at = len(body) - len(r.b)
		op := r.byte()
		switch {
		case op == 0x02 || op == 0x03 || op == 0x04 || op == 0x06 || op == 0x1f: // block, loop, if, try, try_table
			r.blockType()
			if op == 0x1f {
				n := r.u32()
				for i := uint32(0); i < n && r.err == nil; i++ {
					switch kind := r.byte(); kind {
					case 0x00, 0x01: // catch, catch_ref: tag, label
						r.u32()
						r.u32()
					case 0x02, 0x03: // catch_all, catch_all_ref: label
						r.u32()
					default:
						if r.err == nil {
							return fail(fmt.Sprintf("unknown catch kind 0x%02x", kind))
						}
					}
				}
			}
			depth++
			deepest = max(deepest, depth)
			control++
		case op == 0x0b, op == 0x18: // end; delegate ends a try block
			if op == 0x18 {
				r.u32()
			}
			if depth == 0 {
				if op == 0x18 {
					r.b = body[at:]
					return fail("delegate outside a try block")
				}
				if len(r.b) != 0 {
					return fail("bytes after the function's final end")
				}
				return deepest, control, nil
			}
			depth--
		default:
			switch op {
			case 0x05, 0x07, 0x0c, 0x0d, 0x0e, 0x19, 0xd5, 0xd6: // else, catch, br, br_if, br_table, catch_all, br_on_*
				control++
			}
			if !r.skipImmediates(op) {
				r.b = body[at:]
				return fail(opName(op, body[at+1:]))
			}
		}
	}
	// The instruction at offset at could not be decoded.
	reason := r.err.Error()
	if errors.Is(r.err, errTruncated) {
		reason = "truncated instruction"
	}
	r.b = body[at:]
	return fail(reason)
}

func opName(op byte, rest []byte) string {
	if op >= 0xfb && len(rest) > 0 {
		r := reader{b: rest}
		sub := r.u32()
		if r.err == nil {
			return fmt.Sprintf("unknown opcode 0x%02x %d", op, sub)
		}
	}
	return fmt.Sprintf("unknown opcode 0x%02x", op)
}

// skipImmediates consumes the immediates of op (not a control-nesting
// opcode); it returns false for an opcode it does not know.
func (r *reader) skipImmediates(op byte) bool {
	switch {
	case op == 0x00, op == 0x01, op == 0x05, op == 0x0a, op == 0x0f, // unreachable, nop, else, throw_ref, return
		op == 0x19, op == 0x1a, op == 0x1b, // catch_all, drop, select
		op >= 0x45 && op <= 0xc4,           // numeric, sign extension
		op == 0xd1, op == 0xd3, op == 0xd4: // ref.is_null, ref.eq, ref.as_non_null
	case op == 0x07, op == 0x08, op == 0x09, op == 0x0c, op == 0x0d, // catch, throw, rethrow, br, br_if
		op == 0x10, op == 0x12, op == 0x14, op == 0x15, // call, return_call, call_ref, return_call_ref
		op >= 0x20 && op <= 0x26, // local.*, global.*, table.get, table.set
		op == 0x3f, op == 0x40,   // memory.size, memory.grow
		op == 0xd2, op == 0xd5, op == 0xd6: // ref.func, br_on_null, br_on_non_null
		r.u32()
	case op == 0x0e: // br_table
		n := r.u32()
		for i := uint32(0); i <= n && r.err == nil; i++ {
			r.u32()
		}
	case op == 0x11, op == 0x13: // call_indirect, return_call_indirect
		r.u32()
		r.u32()
	case op == 0x1c: // select with types
		n := r.u32()
		for i := uint32(0); i < n && r.err == nil; i++ {
			r.valueType()
		}
	case op >= 0x28 && op <= 0x3e: // loads and stores
		r.memarg()
	case op == 0x41: // i32.const
		r.leb(5)
	case op == 0x42: // i64.const
		r.leb(10)
	case op == 0x43:
		r.take(4)
	case op == 0x44:
		r.take(8)
	case op == 0xd0: // ref.null
		r.leb(5)
	case op == 0xfc:
		return r.skipFC()
	case op == 0xfd:
		return r.skipFD()
	case op == 0xfe:
		return r.skipFE()
	default:
		return false
	}
	return true
}

// skipFC: saturating truncation, bulk memory and table instructions.
func (r *reader) skipFC() bool {
	switch sub := r.u32(); {
	case r.err != nil:
	case sub <= 7:
	case sub == 9, sub == 11, sub == 13, sub == 15, sub == 16, sub == 17: // data.drop, memory.fill, elem.drop, table.grow/size/fill
		r.u32()
	case sub == 8, sub == 10, sub == 12, sub == 14: // memory.init, memory.copy, table.init, table.copy
		r.u32()
		r.u32()
	default:
		return false
	}
	return true
}

// skipFD: SIMD (fixed-width, as wazero implements it; relaxed SIMD is not).
func (r *reader) skipFD() bool {
	switch sub := r.u32(); {
	case r.err != nil:
	case sub <= 0x0b, sub == 0x5c, sub == 0x5d: // loads and stores
		r.memarg()
	case sub == 0x0c, sub == 0x0d: // v128.const, i8x16.shuffle
		r.take(16)
	case sub >= 0x15 && sub <= 0x22: // extract_lane, replace_lane
		r.byte()
	case sub >= 0x54 && sub <= 0x5b: // load_lane, store_lane
		r.memarg()
		r.byte()
	case sub > 0xff || simdHoles[sub]:
		return false
	}
	return true
}

// simdHoles are the unassigned opcodes below 0x100.
var simdHoles = map[uint32]bool{
	0x9a: true, 0xa2: true, 0xa5: true, 0xa6: true, 0xaf: true, 0xb0: true, 0xb2: true, 0xb3: true,
	0xb4: true, 0xbb: true, 0xc2: true, 0xc5: true, 0xc6: true, 0xcf: true, 0xd0: true, 0xd2: true,
	0xd3: true, 0xd4: true, 0xe2: true, 0xee: true,
}

// skipFE: threads (atomic memory instructions).
func (r *reader) skipFE() bool {
	switch sub := r.u32(); {
	case r.err != nil:
	case sub <= 0x02, sub >= 0x10 && sub <= 0x4e: // notify, wait, atomic loads, stores, rmw
		r.memarg()
	case sub == 0x03: // atomic.fence
		r.byte()
	default:
		return false
	}
	return true
}

// memarg skips an alignment (with the multi-memory flag, a memory index)
// and an offset (64-bit with memory64).
func (r *reader) memarg() {
	align := r.u32()
	if align&0x40 != 0 {
		r.u32()
	}
	r.leb(10)
}

// blockType skips a block type: 0x40, a value type, or a type index (s33).
func (r *reader) blockType() {
	if len(r.b) > 0 && (r.b[0] == 0x63 || r.b[0] == 0x64) { // (ref null? ht)
		r.byte()
	}
	r.leb(5)
}

// valueType skips a value type, a reference type with a heap type included.
func (r *reader) valueType() {
	if c := r.byte(); c == 0x63 || c == 0x64 {
		r.leb(5)
	}
}

// leb skips a LEB128 number of at most max bytes.
func (r *reader) leb(max int) {
	for i := 0; i < max; i++ {
		if c := r.byte(); r.err != nil || c < 0x80 {
			return
		}
	}
	r.err = errors.New("LEB128 value too long")
}
