package surface

import "slices"

// Admit validates a committed event (one read from storage, with its seq and
// time already stamped) as the next event and folds it, exactly as Restore
// does for each of its events. On error nothing changes.
func (l *Log) Admit(e Event) error {
	if l.notifying {
		return errorf(l.fold.next, e.Type, RuleReentrant, "append from inside an observer of the same session is not allowed")
	}
	if err := l.admitOne(e, false); err != nil {
		return err
	}
	l.notify([]Event{e})
	return nil
}

// MarkSeed appends the session/end-seed marker that a session constructor
// writes when it resumes a log (3.5), unless the log already ends in one; it
// returns the appended events (none or one). A resumed session that adds
// nothing therefore does not grow the log on the next resume.
func (l *Log) MarkSeed() ([]Event, error) {
	if n := len(l.events); n > 0 && l.events[n-1].Type == TypeEndSeed {
		return nil, nil
	}
	e, err := l.appendMarker(false)
	if err != nil {
		return nil, err
	}
	return []Event{e}, nil
}

// Grow makes room for n more events, so that a loader admitting a known
// number of events one by one does not reallocate the log as it grows.
func (l *Log) Grow(n int) {
	l.events = slices.Grow(l.events, n)
	l.pay = slices.Grow(l.pay, n)
}
