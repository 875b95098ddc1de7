package compact

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// State is what compaction remembers between calls on one session. A
// native provider keeps it in memory; a WebAssembly guest round-trips it
// through the host's state blob with Encode and DecodeState. The zero
// value is the state of a fresh session.
type State struct {
	// Attempts are the turns of the latest automatic compaction brackets,
	// oldest first (at most maxAttempts): the loop-safety window.
	Attempts []int64
	// Warned are the provider/model targets whose configuration error was
	// already reported.
	Warned []string
	// LimitWarned is the turn in which reaching the compaction limit was
	// last reported.
	LimitWarned int64
	// Overflow counts overflow recoveries of the current sequence: in turn
	// OverflowTurn, since the recovery proposed at OverflowSeq, with no
	// assistant message on the surface after it.
	OverflowTurn, OverflowCount, OverflowSeq int64
}

const (
	maxAttempts = 256
	maxWarned   = 64
	stateMagic  = 0xC1
)

func (st *State) warned(target string) bool { return slices.Contains(st.Warned, target) }

func (st *State) warn(target string) {
	if len(st.Warned) >= maxWarned {
		st.Warned = st.Warned[1:]
	}
	st.Warned = append(st.Warned, target)
}

// inWindow counts the attempts within the windowTurns turns ending at turn.
func (st *State) inWindow(turn int64, windowTurns int) int {
	n := 0
	for _, t := range st.Attempts {
		if t > turn-int64(windowTurns) && t <= turn {
			n++
		}
	}
	return n
}

func (st *State) attempt(turn int64) {
	if len(st.Attempts) >= maxAttempts {
		st.Attempts = st.Attempts[1:]
	}
	st.Attempts = append(st.Attempts, turn)
}

// Encode returns the state as a compact binary blob.
func (st *State) Encode() []byte {
	b := []byte{stateMagic}
	b = binary.AppendUvarint(b, uint64(len(st.Attempts)))
	for _, t := range st.Attempts {
		b = binary.AppendVarint(b, t)
	}
	b = binary.AppendUvarint(b, uint64(len(st.Warned)))
	for _, w := range st.Warned {
		b = binary.AppendUvarint(b, uint64(len(w)))
		b = append(b, w...)
	}
	for _, v := range [...]int64{st.LimitWarned, st.OverflowTurn, st.OverflowCount, st.OverflowSeq} {
		b = binary.AppendVarint(b, v)
	}
	return b
}

var errState = errors.New("compaction state blob is malformed")

// DecodeState reads a blob written by Encode; an empty blob is the zero
// state.
func DecodeState(b []byte) (*State, error) {
	st := &State{}
	if len(b) == 0 {
		return st, nil
	}
	if b[0] != stateMagic {
		return nil, fmt.Errorf("%w: unknown format byte %#x", errState, b[0])
	}
	b = b[1:]
	count := func(limit int) (int, error) {
		n, w := binary.Uvarint(b)
		if w <= 0 || n > uint64(limit) {
			return 0, errState
		}
		b = b[w:]
		return int(n), nil
	}
	varint := func() (int64, error) {
		v, w := binary.Varint(b)
		if w <= 0 {
			return 0, errState
		}
		b = b[w:]
		return v, nil
	}
	n, err := count(maxAttempts)
	if err != nil {
		return nil, err
	}
	for range n {
		t, err := varint()
		if err != nil {
			return nil, err
		}
		st.Attempts = append(st.Attempts, t)
	}
	if n, err = count(maxWarned); err != nil {
		return nil, err
	}
	for range n {
		l, err := count(len(b))
		if err != nil {
			return nil, err
		}
		st.Warned = append(st.Warned, string(b[:l]))
		b = b[l:]
	}
	for _, p := range [...]*int64{&st.LimitWarned, &st.OverflowTurn, &st.OverflowCount, &st.OverflowSeq} {
		if *p, err = varint(); err != nil {
			return nil, err
		}
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errState, len(b))
	}
	return st, nil
}
