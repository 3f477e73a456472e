package s3store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"

	"github.com/minio/minio-go/v7"

	"tilecache/internal/apperr"
)

// S3 error codes the store acts on that minio-go has no constant for.
const (
	codeExpiredToken         = "ExpiredToken"
	codeInvalidToken         = "InvalidToken"
	codeTokenRefreshRequired = "TokenRefreshRequired"
	codeAccountProblem       = "AccountProblem"
	codeSlowDown             = "SlowDown"
	codeServiceUnavailable   = "ServiceUnavailable"
	codeRequestTimeout       = "RequestTimeout"
	codeMinioNotInitialized  = "XMinioServerNotInitialized"
	codeKeyTooLong           = "KeyTooLongError"
	codeMinioInvalidResource = "XMinioInvalidResourceName"
)

// isNoSuchKey reports S3's answer for an absent object.
func isNoSuchKey(err error) bool {
	var er minio.ErrorResponse
	return errors.As(err, &er) && er.Code == minio.NoSuchKey
}

// fail wraps err from action (`put "key"`) with that context, after
// classifying it. When ctx is done, the result always satisfies
// errors.Is(err, ctx.Err()), whatever minio-go or net/http made of the
// cancellation.
func (s *Store) fail(ctx context.Context, action string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		if errors.Is(err, cerr) {
			return fmt.Errorf("%s: %w", action, err)
		}
		return fmt.Errorf("%s: %w (%v)", action, cerr, err)
	}
	return fmt.Errorf("%s: %w", action, s.classify(err))
}

// classify translates a minio-go error into an apperr kind: the one place
// that knows S3's error codes. Errors it does not recognise are returned as
// they are (apperr.Internal).
func (s *Store) classify(err error) error {
	var er minio.ErrorResponse
	if errors.As(err, &er) {
		switch er.Code {
		case minio.NoSuchBucket:
			return apperr.Wrap(apperr.NotFound, err, "S3 bucket %q does not exist", s.bucket)
		case minio.AccessDenied, minio.InvalidAccessKeyID, minio.SignatureDoesNotMatch,
			codeExpiredToken, codeInvalidToken, codeTokenRefreshRequired,
			minio.AllAccessDisabled, codeAccountProblem:
			return apperr.Wrap(apperr.Internal, err,
				"S3 denied access to bucket %q (%s): check the credentials and the bucket policy", s.bucket, er.Code)
		case minio.RequestTimeTooSkewed:
			return apperr.Wrap(apperr.Internal, err, "S3 rejected the request time: this machine's clock is off")
		case minio.XMinioInvalidObjectName, codeMinioInvalidResource, codeKeyTooLong:
			return apperr.Wrap(apperr.Invalid, err, "S3 rejected the object name (%s)", er.Code)
		case codeSlowDown, codeServiceUnavailable, codeRequestTimeout, codeMinioNotInitialized, minio.InternalError:
			return apperr.Wrap(apperr.Unavailable, err, "S3 is unavailable (%s)", er.Code)
		}
		if er.StatusCode >= http.StatusInternalServerError {
			return apperr.Wrap(apperr.Unavailable, err, "S3 is unavailable (HTTP %d)", er.StatusCode)
		}
		return err
	}
	var netErr net.Error // *url.Error, which net/http returns, is one too
	if errors.As(err, &netErr) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, context.DeadlineExceeded) {
		return apperr.Wrap(apperr.Unavailable, err, "S3 endpoint %s cannot be reached", s.client.EndpointURL().Host)
	}
	return err
}
