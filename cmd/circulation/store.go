package main

import (
	"database/sql"
	"errors"
	"fmt"
	"os"

	_ "github.com/jackc/pgx/v5/stdlib" // "pgx", for -dsn
	_ "modernc.org/sqlite"             // "sqlite", for -db

	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// The database of -dsn or -db, and a Store on it.

const dbUsage = "give -dsn URL (PostgreSQL) or -db FILE (SQLite), or set $CIRCULATION_DSN or $CIRCULATION_DB"

// dialect returns the dialect of the database the flags name.
func (c *cli) dialect() (sqlstore.Dialect, error) {
	switch {
	case c.dsn != "" && c.db != "":
		return 0, usagef("", "both a PostgreSQL URL and a SQLite file: %s, not both", dbUsage)
	case c.dsn != "":
		return sqlstore.PostgreSQL, nil
	case c.db != "":
		return sqlstore.SQLite, nil
	}
	return 0, usagef("", "no database: %s", dbUsage)
}

// openDB opens the database the flags name. A SQLite file must exist
// unless create.
func (c *cli) openDB(create bool) (*sql.DB, sqlstore.Dialect, error) {
	d, err := c.dialect()
	if err != nil {
		return nil, 0, err
	}
	if d == sqlstore.PostgreSQL {
		db, err := sql.Open("pgx", c.dsn)
		return db, d, err
	}
	if !create {
		if _, err := os.Stat(c.db); errors.Is(err, os.ErrNotExist) {
			return nil, 0, fmt.Errorf("no SQLite database %s: circulation migrate creates it", c.db)
		}
	}
	db, err := sqlstore.OpenSQLite(c.db)
	return db, d, err
}

// store opens a Store on the database the flags name, whose tables must
// be at this tool's schema version: the commands other than migrate
// change no schema. The caller calls close when done.
func (c *cli) store() (s *sqlstore.Store, close func(), err error) {
	db, d, err := c.openDB(false)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			db.Close()
		}
	}()
	v, err := sqlstore.SchemaVersionOf(c.ctx, db, d, c.table)
	switch {
	case err != nil:
		return nil, nil, err
	case v == 0:
		return nil, nil, fmt.Errorf("no tables %s in the database: circulation migrate creates them", c.table)
	case v < sqlstore.SchemaVersion():
		return nil, nil, fmt.Errorf("the tables %s are at schema version %d, and this tool needs %d: run circulation migrate, "+
			"or circulation migrate -print for the SQL", c.table, v, sqlstore.SchemaVersion())
	case v > sqlstore.SchemaVersion():
		return nil, nil, fmt.Errorf("the tables %s are at schema version %d, newer than this tool's %d: use a newer circulation",
			c.table, v, sqlstore.SchemaVersion())
	}
	s, err = sqlstore.New(c.ctx, db, d, sqlstore.WithTable(c.table))
	if err != nil {
		return nil, nil, err
	}
	return s, func() { db.Close() }, nil
}
