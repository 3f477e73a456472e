// The marks of read batches recorded (quota.Marks): the same claim items
// as Claims (pk=claim#<key> sk=claim), taken for a batch's id and kept
// for quota.ReadLogKeep.

package dynamo

import (
	"context"
	"time"

	"tilecache/internal/quota"
)

// ReadMarks remember which batches of reads were recorded (quota.Marks)
// over a Table, with one conditional write each.
type ReadMarks struct{ *store }

var _ quota.Marks = (*ReadMarks)(nil)

// Claim takes key for owner until now+ttl unless another owner holds it
// (Claims.Claim).
func (s *ReadMarks) Claim(ctx context.Context, key, owner string, ttl time.Duration, now time.Time) (bool, error) {
	return (&Claims{s.store}).Claim(ctx, key, owner, ttl, now)
}

// Unclaim releases owner's claim of key (Claims.Unclaim).
func (s *ReadMarks) Unclaim(ctx context.Context, key, owner string) error {
	return (&Claims{s.store}).Unclaim(ctx, key, owner)
}
