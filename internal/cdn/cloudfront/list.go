package cloudfront

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	cf "github.com/aws/aws-sdk-go-v2/service/cloudfront"
	"github.com/aws/aws-sdk-go-v2/service/cloudfront/types"
)

// Invalidation is an invalidation as CloudFront records it.
type Invalidation struct {
	ID         string
	Status     string // "InProgress" or "Completed" as CloudFront spells them
	CallerRef  string
	Paths      []string // as sent, after the adapter's encoding
	CreateTime time.Time
}

// Get returns the invalidation of the distribution with the given id; an
// unknown id is an apperr.NotFound.
func (v *Invalidator) Get(ctx context.Context, id string) (Invalidation, error) {
	out, err := v.client.GetInvalidation(ctx, &cf.GetInvalidationInput{
		DistributionId: aws.String(v.distribution),
		Id:             aws.String(id),
	})
	if err != nil {
		return Invalidation{}, fail(ctx, err, fmt.Sprintf("get invalidation %s of CloudFront distribution %s", id, v.distribution))
	}
	if out.Invalidation == nil {
		return Invalidation{}, fmt.Errorf("get invalidation %s of CloudFront distribution %s: empty answer", id, v.distribution)
	}
	return fromSDK(out.Invalidation), nil
}

// List returns every invalidation of the distribution, newest first. It
// makes one ListInvalidations call per 100 invalidations and one
// GetInvalidation for each (the list carries no caller references or
// paths), so it is meant for tests and operators: CloudFront keeps a long
// history for a busy distribution.
func (v *Invalidator) List(ctx context.Context) ([]Invalidation, error) {
	what := "list invalidations of CloudFront distribution " + v.distribution
	var ids []string
	pages := cf.NewListInvalidationsPaginator(v.client, &cf.ListInvalidationsInput{DistributionId: aws.String(v.distribution)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fail(ctx, err, what)
		}
		if page.InvalidationList == nil {
			continue
		}
		for _, s := range page.InvalidationList.Items {
			ids = append(ids, aws.ToString(s.Id))
		}
	}
	out := make([]Invalidation, 0, len(ids))
	for _, id := range ids {
		inv, err := v.Get(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, inv)
	}
	slices.SortStableFunc(out, func(a, b Invalidation) int { return cmp.Compare(b.CreateTime.UnixNano(), a.CreateTime.UnixNano()) })
	return out, nil
}

func fromSDK(in *types.Invalidation) Invalidation {
	out := Invalidation{
		ID:         aws.ToString(in.Id),
		Status:     aws.ToString(in.Status),
		CreateTime: aws.ToTime(in.CreateTime),
	}
	if b := in.InvalidationBatch; b != nil {
		out.CallerRef = aws.ToString(b.CallerReference)
		if b.Paths != nil {
			out.Paths = b.Paths.Items
		}
	}
	return out
}
