package wheel

// Scans returns how many times w's goroutine has looked at its shards: once
// per wake-up.
func Scans(w *Wheel) uint64 { return w.scans.Load() }
