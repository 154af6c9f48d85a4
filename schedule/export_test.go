package schedule

// Watches returns how many Schedulers have a shared watch.
func Watches() int {
	watches.mu.Lock()
	defer watches.mu.Unlock()
	return len(watches.m)
}
