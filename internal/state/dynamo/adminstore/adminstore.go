// Package adminstore holds the DynamoDB adapters of the administration's
// items, over the task table of package dynamo through its item API
// (dynamo.Items): Accounts (account.Store: the accounts added at run
// time), Tokens (apitoken.Store: the API tokens), Audit (audit.Store: the
// audit trail). They are apart from package dynamo so that an assembly that
// has no administration interface (the tile origin, the log ingest, the
// worker and the cleaner) links neither them nor what they link (bcrypt);
// the schedules of saved requests, which the cleaner fires, are package
// schedulestore's.
//
// Their items are in the same table, in partitions of their own (see
// package dynamo's comment and each file's), laid out as they were when
// package dynamo held them:
//
//	pk=account          sk=<name>       data
//	pk=token            sk=<token id>   data, [revoked], expires
//	pk=audit#<UTC day>  sk=<record id>  data, layer, account, expires
//
// Errors are package dynamo's: a missing item is apperr.NotFound, an item
// that exists where it must not apperr.Conflict, DynamoDB failing
// apperr.Unavailable.
package adminstore

import (
	"time"

	"tilecache/internal/state/dynamo"
)

// Store is the administration's adapters over one table.
type Store struct{ it *dynamo.Items }

// New returns the administration's adapters over table.
func New(table *dynamo.Table) *Store { return &Store{table.Items()} }

// Accounts returns the stored accounts.
func (s *Store) Accounts() *Accounts { return &Accounts{s.it} }

// Tokens returns the API tokens.
func (s *Store) Tokens() *Tokens { return &Tokens{s.it} }

// Audit returns the audit trail, keeping records for retention.
func (s *Store) Audit(retention time.Duration) *Audit { return &Audit{s.it, retention} }

// aData is the attribute holding an account, a token or an audit record.
const aData = "data"
