package cloudfront

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/service/cloudfront/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"tilecache/internal/apperr"
)

// fail classifies an SDK error at the boundary and adds context (what):
//
//   - a cancelled ctx: the error satisfies errors.Is(err, context.Canceled);
//   - throttling, too many invalidations in progress, server faults, a
//     deadline, an expired token, no answer at all: apperr.Unavailable
//     (retrying later may help);
//   - an unknown distribution, access denied, a malformed or refused
//     request, a caller reference reused with other paths: apperr.Invalid
//     (retrying will not help);
//   - an unknown invalidation (Get): apperr.NotFound;
//   - anything else (a request the SDK could not build, an answer it could
//     not read): unclassified.
func fail(ctx context.Context, err error, what string) error {
	if cerr := ctx.Err(); cerr != nil {
		if errors.Is(cerr, context.DeadlineExceeded) {
			return apperr.Wrap(apperr.Unavailable, withCause(err, cerr), "%s: CloudFront did not answer in time", what)
		}
		return fmt.Errorf("%s: %w", what, withCause(err, cerr))
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return apperr.Wrap(apperr.Unavailable, err, "%s: CloudFront did not answer in time", what)
	}
	if _, ok := errors.AsType[*apperr.Error](err); ok {
		return fmt.Errorf("%s: %w", what, err)
	}
	if ae, ok := errors.AsType[smithy.APIError](err); ok {
		return classifyAPI(err, ae, what)
	}
	if re, ok := errors.AsType[*smithyhttp.ResponseError](err); ok && serverTrouble(re.HTTPStatusCode()) {
		return apperr.Wrap(apperr.Unavailable, err, "%s: CloudFront is unavailable (HTTP %d)", what, re.HTTPStatusCode())
	}
	var pe *smithy.InvalidParamsError
	var se *smithy.SerializationError
	var de *smithy.DeserializationError
	if errors.As(err, &pe) || errors.As(err, &se) || errors.As(err, &de) {
		return fmt.Errorf("%s: %w", what, err)
	}
	// No answer from CloudFront at all: connection refused, DNS, reset,
	// the SDK's retry quota.
	return apperr.Wrap(apperr.Unavailable, err, "%s: CloudFront is unreachable", what)
}

// classifyAPI classifies an error answer of CloudFront's.
func classifyAPI(err error, ae smithy.APIError, what string) error {
	code := ae.ErrorCode()
	switch code {
	case (&types.TooManyInvalidationsInProgress{}).ErrorCode():
		return apperr.Wrap(apperr.Unavailable, err,
			"%s: too many invalidations in progress (CloudFront allows %d paths, or %d wildcard paths, in progress at once)", what, MaxPaths, MaxWildcardPaths)
	case "Throttling", "ThrottlingException", "RequestLimitExceeded", "TooManyRequestsException",
		"ServiceUnavailable", "InternalError", "InternalFailure", "InternalServerError",
		"RequestTimeout", "RequestTimeoutException", "ExpiredToken", "RequestExpired":
		return apperr.Wrap(apperr.Unavailable, err, "%s: CloudFront is unavailable (%s)", what, code)
	case (&types.NoSuchDistribution{}).ErrorCode():
		return apperr.Wrap(apperr.Invalid, err, "%s: the distribution does not exist", what)
	case (&types.NoSuchInvalidation{}).ErrorCode():
		return apperr.Wrap(apperr.NotFound, err, "%s: no such invalidation", what)
	case (&types.AccessDenied{}).ErrorCode(), "InvalidClientTokenId", "SignatureDoesNotMatch",
		"MissingAuthenticationToken", "UnrecognizedClientException":
		return apperr.Wrap(apperr.Invalid, err,
			"%s: CloudFront denied access (%s): check the credentials and their permission cloudfront:CreateInvalidation", what, code)
	case "InvalidationBatchAlreadyExists":
		return apperr.Wrap(apperr.Invalid, err, "%s: the caller reference was already used with other paths", what)
	}
	if ae.ErrorFault() == smithy.FaultServer {
		return apperr.Wrap(apperr.Unavailable, err, "%s: CloudFront is unavailable (%s)", what, code)
	}
	if re, ok := errors.AsType[*smithyhttp.ResponseError](err); ok && serverTrouble(re.HTTPStatusCode()) {
		return apperr.Wrap(apperr.Unavailable, err, "%s: CloudFront is unavailable (HTTP %d, %s)", what, re.HTTPStatusCode(), code)
	}
	// InvalidArgument, BatchTooLarge, InconsistentQuantities, MissingBody
	// and whatever else CloudFront refuses as the client's fault.
	return apperr.Wrap(apperr.Invalid, err, "%s: CloudFront refused the request (%s): %s", what, code, apperr.Show(ae.ErrorMessage()))
}

// serverTrouble reports HTTP statuses that say "try again later".
func serverTrouble(status int) bool {
	return status >= http.StatusInternalServerError || status == http.StatusTooManyRequests
}

// withCause returns err, made to also match cause under errors.Is.
func withCause(err, cause error) error {
	if errors.Is(err, cause) {
		return err
	}
	return fmt.Errorf("%w (%w)", cause, err)
}
