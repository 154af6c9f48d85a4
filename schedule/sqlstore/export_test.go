package sqlstore

import "time"

// SetNewTimeout makes New give up after d when its context has no
// deadline, until restore is called.
func SetNewTimeout(d time.Duration) (restore func()) {
	newTimeout = d
	return func() { newTimeout = NewTimeout }
}
