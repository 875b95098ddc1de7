package surface

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
