package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/ebbdb/ebb/engine"
	"github.com/ebbdb/ebb/engine/query"
	"github.com/ebbdb/ebb/policy"
)

// apiError is an error answered to the client: a status, Cosmos DB's
// x-ms-substatus (0: none) and the message of the body
// {"code": ..., "message": ...}.
type apiError struct {
	status    int
	substatus int
	msg       string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.status, codeOf(e.status), e.msg) }

func errorf(status int, format string, args ...any) *apiError {
	return &apiError{status: status, msg: fmt.Sprintf(format, args...)}
}

// Cosmos DB's messages for the common statuses, which clients and tests
// match on.
const (
	msgNotFound     = "Entity with the specified id does not exist in the system."
	msgConflict     = "Entity with the specified id already exists in the system."
	msgPrecondition = "One of the specified pre-condition is not met."
	msgTooLarge     = "Request size is too large"
	msgWrongPK      = "PartitionKey extracted from document doesn't match the one specified in the header. Learn more: https://aka.ms/CosmosDB/sql/errors/wrong-pk-value"
)

// Substatus codes of Cosmos DB that this gateway sends.
const (
	subPartitionKeyMismatch = 1001
	subCrossPartition       = 1004
)

// codeOf is the "code" of an error body for a status.
func codeOf(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "BadRequest"
	case http.StatusUnauthorized:
		return "Unauthorized"
	case http.StatusForbidden:
		return "Forbidden"
	case http.StatusNotFound:
		return "NotFound"
	case http.StatusMethodNotAllowed:
		return "MethodNotAllowed"
	case http.StatusRequestTimeout:
		return "RequestTimeout"
	case http.StatusConflict:
		return "Conflict"
	case http.StatusPreconditionFailed:
		return "PreconditionFailed"
	case http.StatusRequestEntityTooLarge:
		return "RequestEntityTooLarge"
	case http.StatusFailedDependency:
		return "FailedDependency"
	case http.StatusServiceUnavailable:
		return "ServiceUnavailable"
	}
	if status >= 500 {
		return "InternalServerError"
	}
	return http.StatusText(status)
}

// ttlMessage is Cosmos DB's text for an invalid item ttl.
func ttlMessage(value string) string {
	return "The input ttl '" + value + "' is invalid. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire."
}

// defaultTTLMessage is the text for an invalid container defaultTtl.
func defaultTTLMessage(value string) string {
	return "The input default time to live '" + value + "' is invalid. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire."
}

// fromEngine maps an error of the engine (or of this package) to what the
// client is told. It is the one place where engine sentinels become
// statuses.
func fromEngine(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var te *policy.InvalidTTLError
	switch {
	case errors.As(err, &te):
		if te.Field == policy.FieldDefaultTTL {
			return errorf(http.StatusBadRequest, "%s", defaultTTLMessage(te.Value))
		}
		return errorf(http.StatusBadRequest, "%s", ttlMessage(te.Value))
	case errors.Is(err, engine.ErrNotFound):
		return errorf(http.StatusNotFound, "%s (%s)", msgNotFound, clean(err))
	case errors.Is(err, engine.ErrConflict):
		return errorf(http.StatusConflict, "%s (%s)", msgConflict, clean(err))
	case errors.Is(err, engine.ErrPreconditionFailed):
		return errorf(http.StatusPreconditionFailed, "%s (%s)", msgPrecondition, clean(err))
	case errors.Is(err, engine.ErrInvalidPartitionKey):
		msg := clean(err)
		if strings.Contains(err.Error(), "differs from") {
			msg = msgWrongPK + " (" + msg + ")"
		}
		return &apiError{status: http.StatusBadRequest, substatus: subPartitionKeyMismatch, msg: msg}
	case errors.Is(err, engine.ErrInvalidDocument):
		if strings.Contains(err.Error(), "maximum document size") {
			return errorf(http.StatusRequestEntityTooLarge, "%s", msgTooLarge)
		}
		return errorf(http.StatusBadRequest, "%s", clean(err))
	case errors.Is(err, query.ErrInvalidQuery), errors.Is(err, query.ErrSyntax):
		return errorf(http.StatusBadRequest, "%s", clean(err))
	case errors.Is(err, engine.ErrInvalidProperties), errors.Is(err, engine.ErrBatchTooLarge),
		errors.Is(err, engine.ErrEmptyBatch), errors.Is(err, engine.ErrFeedRetention), errors.Is(err, engine.ErrInvalidFeedOptions):
		return errorf(http.StatusBadRequest, "%s", clean(err))
	case errors.Is(err, engine.ErrReadOnly), errors.Is(err, engine.ErrClosed):
		return errorf(http.StatusServiceUnavailable, "%s", clean(err))
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return errorf(http.StatusRequestTimeout, "the request was cancelled: %s", clean(err))
	}
	return errorf(http.StatusInternalServerError, "%s", clean(err))
}

// clean is err's message without the "ebb: " of the engine's sentinels.
func clean(err error) string {
	return strings.ReplaceAll(err.Error(), "ebb: ", "")
}
