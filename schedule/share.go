package schedule

import (
	"runtime"
	"sync"
	"weak"
)

// configs holds, for the settings of Jobs made with options but without a
// Preset, the config they share, weakly: a config that no Job holds any
// more is dropped.
var configs struct {
	mu sync.Mutex
	m  map[settings]weak.Pointer[config]
}

// share returns the config equal to c that Jobs hold already, or else c,
// kept for the Jobs to come, so that a million Jobs made with the same
// options hold one config. A config with a func (WithObserver,
// WithPauseOnFailures) is not shared, as funcs do not compare, nor is one
// whose Store, Scheduler or Logger is a value that does not compare (a
// struct that holds a slice, say): share returns it as it is.
func share(c *config) (shared *config) {
	if c.observer != nil || c.pausedBy != nil {
		return c
	}
	defer func() {
		if recover() != nil { // hashing a value that does not compare
			shared = c
		}
	}()
	configs.mu.Lock()
	defer configs.mu.Unlock()
	if w, ok := configs.m[c.settings]; ok {
		if old := w.Value(); old != nil {
			return old
		}
	}
	if configs.m == nil {
		configs.m = make(map[settings]weak.Pointer[config])
	}
	configs.m[c.settings] = weak.Make(c)
	runtime.AddCleanup(c, forget, c.settings)
	return c
}

// forget drops the entry of s once its config is gone, unless a newer
// config of the same settings took its place.
func forget(s settings) {
	configs.mu.Lock()
	defer configs.mu.Unlock()
	if w, ok := configs.m[s]; ok && w.Value() == nil {
		delete(configs.m, s)
	}
}
