package circulation

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// The delay rule is pure: these tests call it directly. The Supervisor's
// use of it is tested through the public API in supervisor_test.go.

func TestBackoffGrow(t *testing.T) {
	const s = time.Second
	for _, c := range []struct {
		name string
		b    Backoff
		d    time.Duration
		want time.Duration
	}{
		{"doubles", Backoff{Base: s, Max: 10 * s, Multiplier: 2}, s, 2 * s},
		{"reaches Max", Backoff{Base: s, Max: 10 * s, Multiplier: 2}, 8 * s, 10 * s},
		{"stays at Max", Backoff{Base: s, Max: 10 * s, Multiplier: 2}, 10 * s, 10 * s},
		{"just under Max", Backoff{Base: s, Max: 10 * s, Multiplier: 2}, 5*s - 1, 10*s - 2},
		{"fractional", Backoff{Base: s, Max: 10 * s, Multiplier: 1.5}, 2 * s, 3 * s},
		{"multiplier 1 keeps", Backoff{Base: s, Max: 10 * s, Multiplier: 1}, 3 * s, 3 * s},
		{"zero multiplier means 2", Backoff{Base: s, Max: 10 * s}, 3 * s, 6 * s},
		{"no overflow", Backoff{Base: s, Max: math.MaxInt64, Multiplier: 2}, math.MaxInt64/2 + 1, math.MaxInt64},
		{"no overflow at huge multiplier", Backoff{Base: s, Max: time.Hour, Multiplier: 1e300}, time.Hour - 1, time.Hour},
		{"infinite multiplier", Backoff{Base: s, Max: time.Hour, Multiplier: math.Inf(1)}, s, time.Hour},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := c.b.validated()
			if got := b.grow(c.d); got != c.want {
				t.Errorf("grow(%v) = %v, want %v", c.d, got, c.want)
			}
		})
	}
}

func TestBackoffNext(t *testing.T) {
	const s = time.Second
	grows := Backoff{Base: s, Max: 10 * s, Multiplier: 2}
	keeps := Backoff{Base: s, Max: 10 * s, Multiplier: 2, KeepDelayOnError: true}
	retry := Backoff{Base: 30 * s, Max: 5 * time.Minute, Retry: s}
	retryKeeps := Backoff{Base: 30 * s, Max: 5 * time.Minute, Retry: s, KeepDelayOnError: true}
	for _, c := range []struct {
		name  string
		b     Backoff
		d     time.Duration
		o     outcome
		first bool
		want  time.Duration
	}{
		{"success resets", grows, 8 * s, succeeded, false, s},
		{"success at Base", grows, s, succeeded, false, s},
		{"failure grows", grows, 2 * s, failed, false, 4 * s},
		{"failure is capped", grows, 8 * s, failed, false, 10 * s},
		{"error grows by default", grows, 2 * s, errored, false, 4 * s},
		{"error keeps with KeepDelayOnError", keeps, 2 * s, errored, false, 2 * s},
		{"error keeps, even at Base", keeps, s, errored, false, s},
		{"failure still grows with KeepDelayOnError", keeps, 2 * s, failed, false, 4 * s},
		{"success still resets with KeepDelayOnError", keeps, 8 * s, succeeded, false, s},
		{"first failure grows without Retry", grows, s, failed, true, 2 * s},
		{"first failure sets Retry", retry, 30 * s, failed, true, s},
		{"first error sets Retry", retry, 30 * s, errored, true, s},
		{"later failure grows from Retry", retry, s, failed, false, 2 * s},
		{"later failure is capped", retry, 4 * time.Minute, errored, false, 5 * time.Minute},
		{"success resets to Base above Retry", retry, 8 * s, succeeded, false, 30 * s},
		{"Retry above Base", Backoff{Base: s, Max: time.Minute, Retry: 10 * s}, s, failed, true, 10 * s},
		{"Retry equal to Max", Backoff{Base: s, Max: 10 * s, Retry: 10 * s}, s, failed, true, 10 * s},
		{"first error keeps with KeepDelayOnError and Retry", retryKeeps, 30 * s, errored, true, 30 * s},
		{"first timeout sets Retry with KeepDelayOnError", retryKeeps, 30 * s, failed, true, s},
		{"timeout after an error grows with KeepDelayOnError", retryKeeps, 30 * s, failed, false, time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := c.b.validated()
			if got := b.next(c.d, c.o, c.first); got != c.want {
				t.Errorf("next(%v, %v, %v) = %v, want %v", c.d, c.o, c.first, got, c.want)
			}
		})
	}
}

func TestBackoffDelay(t *testing.T) {
	const s = time.Second
	prop := func(j float64) Backoff { return Backoff{Base: s, Max: 100 * s, Jitter: j} }
	full := Backoff{Base: s, Max: 100 * s, JitterMode: JitterFull}
	for _, c := range []struct {
		name string
		b    Backoff
		d    time.Duration
		r    float64
		want time.Duration
	}{
		{"no jitter, r=0", prop(0), 10 * s, 0, 10 * s},
		{"no jitter, r=0.99", prop(0), 10 * s, 0.99, 10 * s},
		{"proportional low end", prop(0.2), 10 * s, 0, 8 * s},
		{"proportional middle", prop(0.2), 10 * s, 0.5, 10 * s},
		{"proportional 3/4", prop(0.2), 10 * s, 0.75, 11 * s},
		{"proportional high end", prop(0.2), 10 * s, 1, 12 * s},
		{"proportional 1, r=0", prop(1), 10 * s, 0, 0},
		{"proportional 1, r=1", prop(1), 10 * s, 1, 20 * s},
		{"Max is a ceiling after jitter", prop(0.2), 100 * s, 0.75, 100 * s},
		{"jitter below Max stays", prop(0.2), 100 * s, 0.25, 90 * s},
		{"ceiling near Max", prop(0.5), 90 * s, 0.9, 100 * s},
		{"full r=0", full, 10 * s, 0, 0},
		{"full r=0.5", full, 10 * s, 0.5, 5 * s},
		{"full r=0.999", full, 10 * s, 0.999, 9990 * time.Millisecond},
		{"full at Max", full, 100 * s, 0.25, 25 * s},
		{"r below 0 is clamped", prop(0.2), 10 * s, -3, 8 * s},
		{"r above 1 is clamped", prop(0.2), 10 * s, 7, 12 * s},
		{"NaN r is clamped to 0", prop(0.2), 10 * s, math.NaN(), 8 * s},
		{"-Inf r is clamped to 0", full, 10 * s, math.Inf(-1), 0},
		{"+Inf r is clamped to 1", full, 10 * s, math.Inf(1), 10 * s},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := c.b.validated()
			if got := b.delay(c.d, c.r); got != c.want {
				t.Errorf("delay(%v, %v) = %v, want %v", c.d, c.r, got, c.want)
			}
		})
	}
}

// TestBackoffDelayBounds checks the rule's bounds over many random draws:
// a delay is never negative, never above Max, and within the jitter's band.
func TestBackoffHint(t *testing.T) {
	b := Backoff{Base: time.Second, Max: time.Minute, Jitter: 1}.validated()
	for d, want := range map[time.Duration]time.Duration{
		-time.Second:       0,
		0:                  0,
		time.Millisecond:   time.Millisecond,
		time.Minute:        time.Minute,
		time.Hour:          time.Minute,
		math.MinInt64:      0,
		math.MaxInt64:      time.Minute,
		17*time.Second + 3: 17*time.Second + 3, // no jitter, although Jitter is 1
	} {
		if got := b.hint(d); got != want {
			t.Errorf("hint(%v) = %v, want %v", d, got, want)
		}
	}
}

func TestBackoffDelayBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		base := time.Duration(1 + rng.Int64N(int64(time.Hour)))
		b := Backoff{
			Base:       base,
			Max:        base + time.Duration(rng.Int64N(int64(time.Hour))),
			Multiplier: 1 + 3*rng.Float64(),
		}
		if rng.IntN(2) == 0 {
			b.Jitter = rng.Float64()
		} else {
			b.JitterMode = JitterFull
		}
		b = b.validated()
		d := b.Base
		for n := rng.IntN(8); n > 0; n-- {
			d = b.grow(d)
		}
		if d < b.Base || d > b.Max {
			t.Fatalf("%+v: interval %v outside [Base, Max]", b, d)
		}
		r := rng.Float64()
		got := b.delay(d, r)
		lo, hi := float64(d)*(1-b.Jitter), float64(d)*(1+b.Jitter)
		if b.JitterMode == JitterFull {
			lo, hi = 0, float64(d)
		}
		hi = math.Min(hi, float64(b.Max))
		if got < 0 || got > b.Max || float64(got) < lo-1 || float64(got) > hi+1 {
			t.Fatalf("%+v: delay(%v, %v) = %v, want within [%v, %v]", b, d, r, got, time.Duration(lo), time.Duration(hi))
		}
	}
}

func TestBackoffValidated(t *testing.T) {
	const s = time.Second
	ok := Backoff{Base: s, Max: 10 * s, Multiplier: 1.5, Jitter: 0.2, Timeout: s}
	for _, c := range []struct {
		name  string
		edit  func(*Backoff)
		panic string // a substring of the panic message; empty: valid
	}{
		{"valid", func(b *Backoff) {}, ""},
		{"Max equal to Base", func(b *Backoff) { b.Max = b.Base }, ""},
		{"zero Timeout", func(b *Backoff) { b.Timeout = 0 }, ""},
		{"full jitter", func(b *Backoff) { b.Jitter, b.JitterMode = 0, JitterFull }, ""},
		{"jitter 1", func(b *Backoff) { b.Jitter = 1 }, ""},
		{"zero Base", func(b *Backoff) { b.Base = 0 }, "circulation: Backoff.Base must be positive, got 0s"},
		{"negative Base", func(b *Backoff) { b.Base = -s }, "Backoff.Base must be positive"},
		{"zero Max", func(b *Backoff) { b.Max = 0 }, "circulation: Backoff.Max (0s) is less than Base (1s)"},
		{"Max below Base", func(b *Backoff) { b.Max = s / 2 }, "Backoff.Max (500ms) is less than Base (1s)"},
		{"Multiplier below 1", func(b *Backoff) { b.Multiplier = 0.5 }, "circulation: Backoff.Multiplier must be at least 1, or 0 for 2; got 0.5"},
		{"negative Multiplier", func(b *Backoff) { b.Multiplier = -2 }, "Backoff.Multiplier must be at least 1"},
		{"NaN Multiplier", func(b *Backoff) { b.Multiplier = math.NaN() }, "got NaN"},
		{"negative Jitter", func(b *Backoff) { b.Jitter = -0.1 }, "circulation: Backoff.Jitter must be in [0, 1], got -0.1"},
		{"Jitter above 1", func(b *Backoff) { b.Jitter = 1.5 }, "Backoff.Jitter must be in [0, 1], got 1.5"},
		{"NaN Jitter", func(b *Backoff) { b.Jitter = math.NaN() }, "Backoff.Jitter must be in [0, 1], got NaN"},
		{"unknown mode", func(b *Backoff) { b.JitterMode = 7 }, "circulation: unknown Backoff.JitterMode 7"},
		{"Jitter with JitterFull", func(b *Backoff) { b.JitterMode = JitterFull }, "circulation: Backoff.Jitter (0.2) must be zero with JitterFull"},
		{"negative Timeout", func(b *Backoff) { b.Timeout = -s }, "circulation: Backoff.Timeout must not be negative, got -1s"},
		{"Retry below Base", func(b *Backoff) { b.Retry = s / 10 }, ""},
		{"Retry equal to Max", func(b *Backoff) { b.Retry = b.Max }, ""},
		{"negative Retry", func(b *Backoff) { b.Retry = -s }, "circulation: Backoff.Retry must not be negative, got -1s"},
		{"Retry above Max", func(b *Backoff) { b.Retry = 11 * s }, "circulation: Backoff.Retry (11s) is more than Max (10s)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := ok
			c.edit(&b)
			// Validate returns the panic's message as an error, naming
			// the field and its value.
			switch err := b.Validate(); {
			case c.panic == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case c.panic != "" && (err == nil || !strings.Contains(err.Error(), c.panic)):
				t.Fatalf("Validate = %v, want an error containing %q", err, c.panic)
			}
			defer func() {
				r := recover()
				switch {
				case c.panic == "" && r != nil:
					t.Fatalf("validated panicked: %v", r)
				case c.panic != "" && r == nil:
					t.Fatalf("validated did not panic, want %q", c.panic)
				case c.panic != "":
					if msg, _ := r.(string); !strings.Contains(msg, c.panic) || msg != b.Validate().Error() {
						t.Fatalf("panic %q, want Validate's message, containing %q", r, c.panic)
					}
				}
			}()
			v := b.validated()
			if v.Multiplier != b.Multiplier && !(b.Multiplier == 0 && v.Multiplier == 2) {
				t.Fatalf("Multiplier %v became %v", b.Multiplier, v.Multiplier)
			}
		})
	}
	if m := (Backoff{Base: s, Max: s}).validated().Multiplier; m != 2 {
		t.Errorf("zero Multiplier became %v, want 2", m)
	}
}

// TestBackoffGrowsFromOneNanosecond: growth makes progress whenever
// Multiplier > 1, even where the product rounds back down to the interval.
func TestBackoffGrowsFromOneNanosecond(t *testing.T) {
	for _, m := range []float64{1.5, 1.0001, math.Nextafter(1, 2)} {
		b := Backoff{Base: 1, Max: 100, Multiplier: m}.validated()
		d := b.Base
		for i := 0; d < b.Max; i++ {
			n := b.grow(d)
			if n <= d {
				t.Fatalf("Multiplier %v: grow(%v) = %v after %d steps: no progress", m, d, n, i)
			}
			d = n
		}
		if d != b.Max {
			t.Fatalf("Multiplier %v: ended at %v, want Max %v", m, d, b.Max)
		}
	}
	if got := (&Backoff{Base: 1, Max: 10, Multiplier: 1.5}).grow(1); got != 2 {
		t.Errorf("grow(1ns) with Multiplier 1.5 = %v, want 2ns", got)
	}
	// Multiplier 1 keeps the interval exactly, even where float64 cannot
	// hold it.
	big := time.Duration(1<<53 + 1)
	if got := (&Backoff{Base: 1, Max: math.MaxInt64, Multiplier: 1}).grow(big); got != big {
		t.Errorf("grow(%d) with Multiplier 1 = %d", big, got)
	}
	// Growth never shrinks a huge interval that float64 rounds down.
	if got := (&Backoff{Base: 1, Max: math.MaxInt64, Multiplier: 1.0000000001}).grow(big); got <= big {
		t.Errorf("grow(%d) with Multiplier 1.0000000001 = %d", big, got)
	}
}
