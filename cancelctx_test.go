package circulation

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunContext(t *testing.T) {
	t.Run("cancel before anyone watches", func(t *testing.T) {
		c := new(cancelContext)
		require.NoError(t, c.Err())
		c.cancel(context.Canceled)
		c.cancel(context.Canceled)
		assert.ErrorIs(t, c.Err(), context.Canceled)
		select {
		case <-c.Done():
		default:
			t.Fatal("Done made after cancel is not closed")
		}
		ran := make(chan struct{})
		context.AfterFunc(c, func() { close(ran) })
		<-ran
	})
	t.Run("watchers see the cancel", func(t *testing.T) {
		c := new(cancelContext)
		done := c.Done()
		child, cancel := context.WithCancel(c)
		defer cancel()
		var called int
		stop := c.AfterFunc(func() { called++ })
		kept := c.AfterFunc(func() { called += 10 })
		assert.True(t, stop(), "stop before cancel reports true")
		c.cancel(context.Canceled)
		<-done
		<-child.Done() // cancelled through AfterFunc
		assert.ErrorIs(t, child.Err(), context.Canceled)
		assert.Equal(t, 10, called)
		assert.False(t, kept(), "stop after cancel reports false")
		c.cancel(context.Canceled)
		assert.Equal(t, 10, called, "a second cancel calls nothing again")
	})
	t.Run("a deadline, and the first cancel wins", func(t *testing.T) {
		c := new(cancelContext)
		assert.True(t, c.cancel(context.DeadlineExceeded))
		assert.False(t, c.cancel(context.Canceled))
		assert.ErrorIs(t, c.Err(), context.DeadlineExceeded)
		<-c.Done()
		assert.ErrorIs(t, c.Err(), context.DeadlineExceeded)
	})
	t.Run("no deadline, no values", func(t *testing.T) {
		c := new(cancelContext)
		_, ok := c.Deadline()
		assert.False(t, ok)
		assert.Nil(t, c.Value("k"))
		assert.Equal(t, "circulation.run", c.String())
	})
}

// Done, AfterFunc and Err race with cancel: whoever comes first, a watcher
// sees the cancel.
func TestRunContextRace(t *testing.T) {
	for range 2000 {
		c := new(cancelContext)
		var wg sync.WaitGroup
		got := make(chan struct{}, 2)
		wg.Go(func() {
			<-c.Done()
			got <- struct{}{}
		})
		wg.Go(func() {
			c.AfterFunc(func() { got <- struct{}{} })
		})
		wg.Go(func() { c.cancel(context.Canceled) })
		for range 2 {
			select {
			case <-got:
			case <-time.After(10 * time.Second):
				t.Fatal("a watcher missed the cancel")
			}
		}
		wg.Wait()
		require.ErrorIs(t, c.Err(), context.Canceled)
	}
}

// Err reports a cancel only once Done is closed, and a cancel that races
// with another returns only once Done is closed, whichever of them won.
func TestRunContextErrAndDoneTogether(t *testing.T) {
	errEarly, returnedEarly := 0, 0
	for range 5000 {
		c := new(cancelContext)
		done := c.Done()
		var wg sync.WaitGroup
		wg.Go(func() { c.cancel(context.Canceled) })
		for c.Err() == nil {
		}
		select {
		case <-done:
		default:
			errEarly++
		}
		c.cancel(context.Canceled) // the second cancel
		select {
		case <-done:
		default:
			returnedEarly++
		}
		wg.Wait()
	}
	assert.Zero(t, errEarly, "Err reported the cancel while Done was open")
	assert.Zero(t, returnedEarly, "a second cancel returned while Done was open")
}
