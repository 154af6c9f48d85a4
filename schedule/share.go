package schedule

import (
	"reflect"
	"runtime"
	"sync"
	"weak"
)

// configs holds, for the options of Jobs made without a Preset, the config
// they share, weakly: a config that no Job holds any more is dropped.
var configs struct {
	mu sync.Mutex
	m  map[configKey]weak.Pointer[config]
}

// configKey names a config by its settings and by the identity of what
// it points to: the type and address of each, which do not keep it alive.
// A config that shares its entry holds its pointees, so that no other
// object takes their addresses while it lives; an entry whose config is
// gone is replaced, or dropped by its cleanup.
type configKey struct {
	settings
	limit, trace, log uintptr
	store, sched      ident // a config's shared and lease follow from its store
}

// ident is the type and address of a pointer held in an interface, or
// zero for nil.
type ident struct {
	t reflect.Type
	p uintptr
}

// identOf returns the ident of v, and false if v is neither nil nor a
// pointer.
func identOf(v any) (ident, bool) {
	if v == nil {
		return ident{}, true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer {
		return ident{}, false
	}
	return ident{t: rv.Type(), p: rv.Pointer()}, true
}

// addr returns the address p points to, 0 for nil.
func addr[T any](p *T) uintptr {
	if p == nil {
		return 0
	}
	return reflect.ValueOf(p).Pointer()
}

// keyOf returns the configKey of c, and false if c is not to be shared:
// it has a func (WithObserver, WithPauseOnFailures), which does not
// compare, or a Store or Scheduler that is not a pointer.
func keyOf(c *config) (configKey, bool) {
	if c.observer != nil || c.pausedBy != nil {
		return configKey{}, false
	}
	store, ok := identOf(c.store)
	if !ok {
		return configKey{}, false
	}
	sched, ok := identOf(c.sched)
	if !ok {
		return configKey{}, false
	}
	return configKey{
		settings: c.settings,
		limit:    addr(c.limit), trace: addr(c.trace), log: addr(c.log),
		store: store, sched: sched,
	}, true
}

// share returns the config equal to c that Jobs hold already, or else c,
// kept for the Jobs to come, so that a million Jobs made with the same
// options hold one config. A config keyOf does not share is returned as
// it is.
func share(c *config) *config {
	k, ok := keyOf(c)
	if !ok {
		return c
	}
	configs.mu.Lock()
	defer configs.mu.Unlock()
	if w, ok := configs.m[k]; ok {
		if old := w.Value(); old != nil {
			return old
		}
	}
	if configs.m == nil {
		configs.m = make(map[configKey]weak.Pointer[config])
	}
	configs.m[k] = weak.Make(c)
	runtime.AddCleanup(c, forget, k)
	return c
}

// forget drops the entry of k once its config is gone, unless a newer
// config took its place.
func forget(k configKey) {
	configs.mu.Lock()
	defer configs.mu.Unlock()
	if w, ok := configs.m[k]; ok && w.Value() == nil {
		delete(configs.m, k)
	}
}
