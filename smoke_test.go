package circulation_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/circulation-go/circulation"
)

func TestSmoke(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int32
		start := time.Now()
		tr := circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) {
			k := n.Add(1)
			t.Logf("run %d at %v", k, time.Since(start))
			return time.Second, k < 3
		})
		tr.FireAfter(5 * time.Minute)
		tr.FireAfter(time.Minute)
		time.Sleep(10 * time.Minute)
		if err := tr.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Log(n.Load())
	})
}
