//go:build unix && !linux

package file

// lockPID is 0: only Linux lists the holders of flocks (/proc/locks).
func lockPID(dev, ino uint64) int { return 0 }
