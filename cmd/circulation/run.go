package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

const runUsage = "circulation tasks run NAME -admin URL"

// tasksRun asks a service's admin page to run the task now. A task runs
// in a service's cron.Table, not in the database: the page's "Run now"
// (POST api/run) asks the Table of the service that serves it, whose run
// is claimed in the store like any other, and recorded with Reason
// Manual.
func (c *cli) tasksRun(args []string) error {
	fs := c.flags("tasks run")
	admin := fs.String("admin", os.Getenv("CIRCULATION_ADMIN"),
		"the URL of the service's admin page ($CIRCULATION_ADMIN); user:password@ in it for basic auth")
	rest, err := c.parse(fs, runUsage, args, 1, 1)
	if err != nil {
		return err
	}
	if *admin == "" {
		return usagef(runUsage+flagList(fs), "tasks run: no -admin URL: a task runs in a service, which its admin page asks")
	}
	base, err := url.Parse(*admin)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") {
		return usagef(runUsage+flagList(fs), "tasks run: -admin %q is not an http or https URL", *admin)
	}
	form := url.Values{"kind": {"task"}, "name": {rest[0]}}
	req, err := http.NewRequestWithContext(c.ctx, http.MethodPost, base.JoinPath("api", "run").String(), strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if u := base.User; u != nil {
		pw, _ := u.Password()
		req.SetBasicAuth(u.Username(), pw)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("asking the admin page: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("reading the admin page's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(body, &e) != nil || e.Error == "" {
			return fmt.Errorf("the admin page answered %s", resp.Status)
		}
		return fmt.Errorf("the admin page answered %s: %s", resp.Status, e.Error)
	}
	var done struct {
		Name string `json:"name"`
		Done string `json:"done"`
	}
	if err := json.Unmarshal(body, &done); err != nil || done.Done != "run" {
		return errors.New("the admin page's answer does not read: is -admin the URL of the page?")
	}
	if c.json {
		return c.writeJSON(struct {
			Run string `json:"run"`
		}{rest[0]})
	}
	fmt.Fprintf(c.stdout, "asked the service to run task %s now\n", cell(rest[0]))
	return nil
}
