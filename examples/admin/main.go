// Command admin serves the admin page of a service whose users define
// scheduled tasks: the definitions and the run records are in a SQLite
// file, a cron.Table follows the definitions, and a schedule.Job of the
// service's own, a heartbeat, runs beside the tasks. The page is mounted
// at /jobs/, behind basic auth: the user "admin" may run, pause, resume,
// create, edit and delete tasks; the user "viewer" may look.
//
//	cd examples/admin && go run .
//	go run . -addr 127.0.0.1:9000 -db ./jobs.db -admin-password secret
//
// It prints the page's URL and the passwords, made up at each start
// unless given, and serves until interrupted (Ctrl-C) or terminated. Without -db, the
// file is in a temporary folder, removed at the end; with -db, the tasks
// and their history are kept across restarts, and the first start defines
// a few.
package main

import (
	"context"
	crand "crypto/rand"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	_ "modernc.org/sqlite"

	"github.com/circulation-go/circulation/admin"
	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// The page edits the definitions of the store itself: a
// *sqlstore.Definitions is an admin.Definitions, with no adapter.
var _ admin.Definitions = (*sqlstore.Definitions)(nil)

// config is what the flags say.
type config struct {
	addr, db              string
	adminPass, viewerPass string
	location              *time.Location
}

func main() {
	var c config
	flag.StringVar(&c.addr, "addr", "127.0.0.1:8080", "the address to serve the page on")
	flag.StringVar(&c.db, "db", "", "the SQLite file of the tasks and their records; empty for one in a temporary folder")
	flag.StringVar(&c.adminPass, "admin-password", "", "the password of the user admin, who may change things; made up if empty")
	flag.StringVar(&c.viewerPass, "viewer-password", "", "the password of the user viewer, who may look; made up if empty")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "admin: unexpected argument %q\n", flag.Arg(0))
		os.Exit(2)
	}
	c.location = time.Local
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := serve(ctx, c, os.Stdout, nil)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "admin:", err)
		os.Exit(1)
	}
}

// serve runs the service until ctx is done, printing to out what it
// does; it calls ready, if not nil, with the page's URL once it serves.
func serve(ctx context.Context, c config, out io.Writer, ready func(url string)) (err error) {
	if c.adminPass == "" {
		c.adminPass = crand.Text()[:12]
	}
	if c.viewerPass == "" {
		c.viewerPass = crand.Text()[:12]
	}
	path := c.db
	if path == "" {
		dir, err := os.MkdirTemp("", "admin-example")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		path = filepath.Join(dir, "jobs.db")
	}
	db, err := sqlstore.OpenSQLite(path)
	if err != nil {
		return err
	}
	defer db.Close()
	store, err := sqlstore.New(ctx, db, sqlstore.SQLite, sqlstore.WithHistory(200, 50))
	if err != nil {
		return err
	}
	defer store.Close() // before db.Close: on PostgreSQL, it stops the listener of the definitions
	defs := store.Definitions()
	if err := seed(ctx, defs); err != nil {
		return err
	}

	// The tasks run the handlers registered here, by name; the users pick
	// one for each task, with a business id.
	table := cron.NewTable(handlers(), cron.WithLocation(c.location), cron.WithStore(store),
		cron.WithJobOptions(schedule.WithNode("example")))
	defer func() { err = errors.Join(err, table.Stop(context.Background())) }()
	if err := table.Follow(ctx, defs, cron.WithErrorHandler(func(err error) { fmt.Fprintln(out, "tasks:", err) })); err != nil {
		return err
	}
	heartbeat := schedule.NewJob("heartbeat", schedule.Every(10*time.Second), func(context.Context, schedule.Run) error {
		return nil
	}, schedule.WithStore(store), schedule.WithNode("example"))
	if err := heartbeat.Start(ctx); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, heartbeat.Stop(context.Background())) }()

	page := admin.New(admin.Options{
		Table:       table,
		Jobs:        []*schedule.Job{heartbeat},
		Specs:       map[string]string{"heartbeat": "@every 10s"},
		Store:       store,
		Definitions: defs,
		// Each change made on the page is kept beside the definitions,
		// with the user who made it.
		Audit:     defs,
		User:      userOf,
		Authorize: func(r *http.Request) bool { return userOf(r) == "admin" },
		Location:  c.location,
		Title:     "Example shop: scheduled jobs",
		// The overview lists the nodes of the store's table: a
		// sqlstore.Node converts to an admin.Node, field for field.
		Nodes: func(ctx context.Context) ([]admin.Node, error) {
			ns, err := store.Nodes(ctx)
			out := make([]admin.Node, len(ns))
			for i, n := range ns {
				out[i] = admin.Node(n)
			}
			return out, err
		},
	})
	users := map[string]string{"admin": c.adminPass, "viewer": c.viewerPass}
	mux := http.NewServeMux()
	mux.Handle("/jobs/", http.StripPrefix("/jobs", basicAuth(users, page)))
	mux.Handle("/{$}", http.RedirectHandler("/jobs/", http.StatusSeeOther))

	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	url := "http://" + ln.Addr().String() + "/jobs/"
	fmt.Fprintf(out, "admin page: %s\n  admin / %s may change things\n  viewer / %s may look\n", url, c.adminPass, c.viewerPass)
	if ready != nil {
		ready(url)
	}
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shut)
}

// handlers are the service's handlers: a report that takes a moment, an
// export that fails one time in three, and a cleanup.
func handlers() map[string]cron.Handler {
	pause := func(ctx context.Context, d time.Duration) error {
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return map[string]cron.Handler{
		"report": func(ctx context.Context, shop string, r schedule.Run) error {
			return pause(ctx, time.Duration(200+rand.IntN(800))*time.Millisecond)
		},
		"export": func(ctx context.Context, shop string, r schedule.Run) error {
			if err := pause(ctx, 300*time.Millisecond); err != nil {
				return err
			}
			if rand.IntN(3) == 0 {
				return fmt.Errorf("export of %s: the warehouse did not answer", shop)
			}
			return nil
		},
		"cleanup": func(ctx context.Context, _ string, r schedule.Run) error {
			return pause(ctx, 100*time.Millisecond)
		},
	}
}

// seed defines a few tasks in an empty store, as its users would have.
func seed(ctx context.Context, defs *sqlstore.Definitions) error {
	have, err := defs.List(ctx)
	if err != nil || len(have) > 0 {
		return err
	}
	for _, t := range []cron.Task{
		{Name: "shop-1 daily report", Handler: "report", BusinessID: "shop-1", Spec: "0 9 * * 1-5", Zone: "Europe/Paris", Permanent: true},
		{Name: "shop-2 stock export", Handler: "export", BusinessID: "shop-2", Spec: "*/30 * * * * *", Zone: "America/New_York", Permanent: true,
			Timeout: cron.Duration(time.Minute)},
		{Name: "shop-3 weekly digest", Handler: "report", BusinessID: "shop-3", Spec: "0 8 * * MON", Zone: "Asia/Tokyo", Permanent: true},
		{Name: "nightly cleanup", Handler: "cleanup", Spec: "30 2 * * *", Permanent: true, Paused: true},
		{Name: "every minute report", Handler: "report", BusinessID: "shop-1", Spec: "* * * * *", Permanent: true, Overlap: "buffer-one"},
	} {
		if _, err := defs.Create(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// userKey is the key of the user's name in a request's context.
type userKey struct{}

// basicAuth lets in the requests of users, by name and password, with the
// user's name in their context; it asks the others to log in.
func basicAuth(users map[string]string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, pass, ok := r.BasicAuth()
		want, known := users[name]
		if !ok || !known || subtle.ConstantTimeCompare([]byte(pass), []byte(want)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="jobs", charset="UTF-8"`)
			http.Error(w, "log in as admin or viewer", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, name)))
	})
}

// userOf returns the user basicAuth let in, or "".
func userOf(r *http.Request) string {
	name, _ := r.Context().Value(userKey{}).(string)
	return name
}
