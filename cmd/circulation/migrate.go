package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/circulation-go/circulation/schedule/sqlstore"
)

const migrateUsage = "circulation migrate [-print [-from N]]"

// migrate creates or migrates the tables, as sqlstore.New does, or, with
// -print, prints the SQL that would, for a DBA to run.
func (c *cli) migrate(args []string) error {
	fs := c.flags("migrate")
	printSQL := fs.Bool("print", false, "print the SQL that migrates the tables, and change nothing")
	from := fs.Int("from", -1, "with -print, the version the database is at, read from it if not given")
	if _, err := c.parse(fs, migrateUsage, args, 0, 0); err != nil {
		return err
	}
	if *from >= 0 && !*printSQL {
		return usagef(migrateUsage, "migrate: -from goes with -print")
	}
	if *printSQL && *from >= 0 {
		// No connection: the flags name the dialect.
		d, err := c.dialect()
		if err != nil {
			return err
		}
		return c.printMigration(d, *from)
	}
	if *printSQL && c.dsn == "" && c.db != "" {
		if _, err := os.Stat(c.db); errors.Is(err, os.ErrNotExist) {
			return c.printMigration(sqlstore.SQLite, 0) // the file is made by the script
		}
	}
	db, d, err := c.openDB(!*printSQL)
	if err != nil {
		return err
	}
	defer db.Close()
	v, err := sqlstore.SchemaVersionOf(c.ctx, db, d, c.table)
	if err != nil {
		return err
	}
	if *printSQL {
		return c.printMigration(d, v)
	}
	if v > sqlstore.SchemaVersion() {
		return fmt.Errorf("the tables %s are at schema version %d, newer than this tool's %d: use a newer circulation",
			c.table, v, sqlstore.SchemaVersion())
	}
	if _, err := sqlstore.New(c.ctx, db, d, sqlstore.WithTable(c.table)); err != nil {
		return err
	}
	to := sqlstore.SchemaVersion()
	if c.json {
		return c.writeJSON(struct {
			Table string `json:"table"`
			From  int    `json:"from"`
			To    int    `json:"to"`
		}{c.table, v, to})
	}
	if v == to {
		fmt.Fprintf(c.stdout, "the tables %s are at schema version %d already\n", c.table, to)
	} else {
		fmt.Fprintf(c.stdout, "migrated the tables %s from schema version %d to %d\n", c.table, v, to)
	}
	return nil
}

// printMigration prints the SQL that takes the tables from version from
// to this tool's.
func (c *cli) printMigration(d sqlstore.Dialect, from int) error {
	script, err := sqlstore.MigrationSQL(d, c.table, from)
	if err != nil {
		return err
	}
	if script == "" {
		fmt.Fprintf(c.stderr, "circulation: the tables %s are at schema version %d already: no SQL to run\n", c.table, from)
		return nil
	}
	_, err = fmt.Fprint(c.stdout, script)
	return err
}
