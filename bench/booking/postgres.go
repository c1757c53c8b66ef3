// The bench's own PostgreSQL database: created and dropped by the bench, and its counters read from the admin
// connection so the reading is not counted.

package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// postgres is the admin connection and the bench's own database.
type postgres struct {
	admin    *sqlx.DB
	name     string
	benchURL string
}

// openPG connects with the admin URL and creates the bench's database; close drops it.
func openPG(ctx context.Context, adminURL, name string) (*postgres, error) {
	u, err := url.Parse(adminURL)
	if err != nil {
		return nil, fmt.Errorf("database url: %w", err)
	}
	admin, err := sqlx.Open("postgres", adminURL)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	admin.SetMaxOpenConns(1)
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+pq.QuoteIdentifier(name)); err != nil {
		admin.Close()
		return nil, fmt.Errorf("postgres: create database: %w", err)
	}
	u.Path = "/" + name
	return &postgres{admin: admin, name: name, benchURL: u.String()}, nil
}

func (p *postgres) close(ctx context.Context) error {
	defer p.admin.Close()
	if _, err := p.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+pq.QuoteIdentifier(p.name)+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("postgres: drop database %s: %w", p.name, err)
	}
	return nil
}

// dbCounters are the bench database's cumulative counters in pg_stat_database.
type dbCounters struct {
	// Xacts is xact_commit + xact_rollback: every transaction, a lone statement's included. A new
	// connection counts one too (the backend's start-up reads the catalog in a transaction of its own).
	Xacts int64 `db:"xacts"`
	// Sessions is the connections established (PostgreSQL 14+).
	Sessions int64 `db:"sessions"`
}

// counters reads the bench database's pg_stat_database row as it is now (from the admin database, so the
// reading itself is not counted).
func (p *postgres) counters(ctx context.Context) (dbCounters, error) {
	if _, err := p.admin.ExecContext(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
		return dbCounters{}, fmt.Errorf("postgres: stats: %w", err)
	}
	var c dbCounters
	if err := p.admin.GetContext(ctx, &c, `SELECT xact_commit + xact_rollback AS xacts, sessions FROM pg_stat_database WHERE datname = $1`, p.name); err != nil {
		return dbCounters{}, fmt.Errorf("postgres: stats: %w", err)
	}
	return c, nil
}

// maintenance is one autovacuum or autoanalyze of a table.
type maintenance struct {
	Table string    `json:"table" db:"relname"`
	Kind  string    `json:"kind" db:"kind"`
	At    time.Time `json:"at" db:"at"`
}

// maintenance lists what autovacuum did in the bench database, catalogs included (last run per table).
func (p *postgres) maintenance(ctx context.Context) ([]maintenance, error) {
	db, err := sqlx.Open("postgres", p.benchURL)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	defer db.Close()
	var out []maintenance
	err = db.SelectContext(ctx, &out, `SELECT relname, 'autovacuum' AS kind, last_autovacuum AS at FROM pg_stat_all_tables WHERE last_autovacuum IS NOT NULL
		UNION ALL SELECT relname, 'autoanalyze', last_autoanalyze FROM pg_stat_all_tables WHERE last_autoanalyze IS NOT NULL
		ORDER BY at`)
	if err != nil {
		return nil, fmt.Errorf("postgres: autovacuum: %w", err)
	}
	return out, nil
}

func (p *postgres) version(ctx context.Context) (string, error) {
	var v string
	if err := p.admin.GetContext(ctx, &v, `SELECT current_setting('server_version')`); err != nil {
		return "", fmt.Errorf("postgres: version: %w", err)
	}
	return strings.Fields(v)[0], nil
}
