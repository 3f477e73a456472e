// Package sqlitedb opens the SQLite files of the archive formats that are
// SQLite databases (MBTiles, GeoPackage), with the pure-Go driver.
package sqlitedb

import (
	"context"
	"database/sql"
	"net/url"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// Open opens the database file at path (created when absent, unless
// readOnly). A writable one holds one connection, so that its writes are
// one transaction at a time.
func Open(ctx context.Context, path string, readOnly bool) (*sql.DB, error) {
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath()
	if readOnly {
		dsn += "?mode=ro"
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	if !readOnly {
		db.SetMaxOpenConns(1)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}
