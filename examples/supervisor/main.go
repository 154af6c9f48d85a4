// Command supervisor keeps a registration alive against a flaky registry,
// as Eureka's TimedSupervisorTask does for a registry refresh, and prints
// each attempt's outcome and the delay before the next as it happens.
//
// The registry is an httptest server that answers, fails, asks to be left
// alone for a while (503 with Retry-After), hangs past the attempt's
// timeout, and finally answers 410 Gone: the registration is no more, and
// retrying cannot help. The program shows:
//
//   - WithNotify: each outcome comes with the delay drawn for the next
//     attempt, so the log says "retrying in X" as it happens, with no
//     polling, and says nothing of a next attempt after the 410;
//   - Retry: the first failure in a row waits Retry, not Base × Multiplier;
//   - RetryAfter: the server's Retry-After is obeyed exactly, capped at Max;
//   - an attempt that hangs past its Timeout is abandoned (a timeout), and
//     its late return changes nothing;
//   - Wait returns the permanent error that stopped the Supervisor.
//
// Every duration is a multiple of Base, which -base sets:
//
//	go run ./examples/supervisor
//	go run ./examples/supervisor -base 20ms
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/circulation-go/circulation"
)

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "supervisor: %v (see -h)\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	_, err = run(ctx, os.Stdout, cfg)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "supervisor: %v\n", err)
		os.Exit(1)
	}
}

type config struct {
	base time.Duration // the Backoff's Base; every other duration is a multiple of it
}

const minBase, maxBase = 10 * time.Millisecond, 150 * time.Millisecond

// parseFlags parses the command line. It returns flag.ErrHelp, after
// printing the usage to stderr, if asked for help; any other error is for
// main to print in one line.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	cfg := config{base: 100 * time.Millisecond}
	fs := flag.NewFlagSet("supervisor", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.DurationVar(&cfg.base, "base", cfg.base,
		fmt.Sprintf("the delay after a success, `d` (%v to %v); the story lasts about 20×d", minBase, maxBase))
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fs.Usage()
		}
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if cfg.base < minBase || cfg.base > maxBase {
		return cfg, fmt.Errorf("-base must be between %v and %v, got %v", minBase, maxBase, cfg.base)
	}
	return cfg, nil
}

// registry answers the n-th request as the script says.
type registry struct {
	n atomic.Int32
}

func (r *registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	switch r.n.Add(1) {
	case 1, 6:
		w.WriteHeader(http.StatusOK)
	case 2:
		w.WriteHeader(http.StatusServiceUnavailable)
	case 3:
		w.Header().Set("Retry-After", "1") // seconds: more than Max
		w.WriteHeader(http.StatusServiceUnavailable)
	case 4:
		<-req.Context().Done() // hangs until the client gives up
	case 5:
		w.WriteHeader(http.StatusInternalServerError)
	default:
		w.WriteHeader(http.StatusGone)
	}
}

// refresh is the Supervisor's task: one request to the registry, its
// answer turned into what the Supervisor understands.
func refresh(client *http.Client, url string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, nil)
		if err != nil {
			return circulation.Permanent(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err() // timed out, or stopped
			}
			return err
		}
		resp.Body.Close()
		status := fmt.Errorf("registry: %s", resp.Status)
		switch {
		case resp.StatusCode == http.StatusOK:
			return nil
		case resp.StatusCode == http.StatusGone:
			return circulation.Permanent(status) // retrying cannot help
		case resp.Header.Get("Retry-After") != "":
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
				return circulation.RetryAfter(time.Duration(s)*time.Second, status)
			}
		}
		return status
	}
}

// run keeps the registration alive until the registry answers 410 Gone,
// printing each outcome to w, and returns the Supervisor's Stats.
func run(ctx context.Context, w io.Writer, cfg config) (circulation.Stats, error) {
	srv := httptest.NewServer(&registry{})
	defer srv.Close()
	client := srv.Client()
	defer client.CloseIdleConnections()

	b := cfg.base
	policy := circulation.Backoff{
		Base:    b,     // while healthy
		Retry:   b / 2, // after the first failure in a row
		Max:     8 * b,
		Timeout: 2 * b,
		// No Jitter, so that the delays are exact. A fleet of clients
		// wants some (Jitter: 0.2) so that they do not retry in step.
	}
	fmt.Fprintf(w, "Backoff: Base %v, Retry %v, Max %v, Multiplier 2, Timeout %v, no jitter\n",
		policy.Base, policy.Retry, policy.Max, policy.Timeout)
	s := circulation.Supervise(refresh(client, srv.URL), policy, circulation.WithNotify(func(ev circulation.AttemptEvent) {
		// The calls never overlap: w needs no lock.
		fmt.Fprintln(w, describe(ev))
	}))
	s.Fire()
	err := s.Wait(ctx)
	if ctx.Err() != nil {
		fmt.Fprintln(w, "interrupted")
	}
	// Close waits for the attempt in flight, if any, and its notification.
	if cerr := s.Close(context.Background()); cerr != nil {
		return s.Stats(), cerr
	}
	st := s.Stats()
	fmt.Fprintf(w, "stopped: %v\nStats: %+v\n", err, st)
	return st, nil
}

// describe says what an event means, in one line.
func describe(ev circulation.AttemptEvent) string {
	line := fmt.Sprintf("attempt %d: %v", ev.Attempt, ev.Outcome)
	if ev.Err != nil {
		line += ": " + ev.Err.Error()
	}
	switch ev.Outcome {
	case circulation.AttemptTimedOut:
		line += " (abandoned, but no other attempt starts while it runs)"
	case circulation.AttemptLate:
		line += " (returned after its timeout: ignored)"
	case circulation.AttemptStopped:
		line += " (permanent: no more attempts)"
	}
	if ev.Scheduled {
		line += fmt.Sprintf("; next attempt in %v", ev.Next)
	}
	return line
}
