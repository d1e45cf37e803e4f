// Package problem owns the error codes of the public contract: each code, the
// HTTP status it always travels with, and the error value that carries a code
// and a detail written for people from the domain up to the HTTP edge.
package problem

import (
	"errors"
	"net/http"
	"time"
)

// Code is a stable, machine-readable error code of the contract.
type Code string

// The contract's error codes.
const (
	InvalidRequest               Code = "invalid_request"
	PayloadTooLarge              Code = "payload_too_large"
	Unauthorized                 Code = "unauthorized"
	Forbidden                    Code = "forbidden"
	NotFound                     Code = "not_found"
	MethodNotAllowed             Code = "method_not_allowed"
	InvalidSandboxAllocation     Code = "invalid_sandbox_allocation"
	AllocationRoutingConflict    Code = "allocation_routing_conflict"
	SandboxAllocationRetired     Code = "sandbox_allocation_retired"
	SandboxRuntimeRetired        Code = "sandbox_runtime_retired"
	SandboxSelectionDisabled     Code = "sandbox_selection_disabled"
	SandboxAllocationUnavailable Code = "sandbox_allocation_unavailable"
	OperationKeyReuseMismatch    Code = "operation_key_reuse_mismatch"
	OperationKeyPayloadMismatch  Code = "operation_key_payload_mismatch"
	CreationInProgress           Code = "creation_in_progress"
	TriggerLimitReached          Code = "trigger_limit_reached"
	EnvironmentNameTaken         Code = "environment_name_taken"
	EnvironmentInUse             Code = "environment_in_use"
	EnvironmentLimitReached      Code = "environment_limit_reached"
	EnvironmentNotFound          Code = "environment_not_found"
	OutcomeAlreadyRecorded       Code = "outcome_already_recorded"
	SessionClaimed               Code = "session_claimed"
	SessionEnded                 Code = "session_ended"
	SessionRecordInvalid         Code = "session_record_invalid"
	InternalError                Code = "internal_error"
	UnsupportedMediaType         Code = "unsupported_media_type"
	RateLimited                  Code = "rate_limited"
	ServiceUnavailable           Code = "service_unavailable"
)

var statuses = map[Code]int{
	InvalidRequest:               http.StatusBadRequest,
	PayloadTooLarge:              http.StatusRequestEntityTooLarge,
	Unauthorized:                 http.StatusUnauthorized,
	Forbidden:                    http.StatusForbidden,
	NotFound:                     http.StatusNotFound,
	MethodNotAllowed:             http.StatusMethodNotAllowed,
	InvalidSandboxAllocation:     http.StatusBadRequest,
	AllocationRoutingConflict:    http.StatusBadRequest,
	SandboxAllocationRetired:     http.StatusUnprocessableEntity,
	SandboxRuntimeRetired:        http.StatusUnprocessableEntity,
	SandboxSelectionDisabled:     http.StatusForbidden,
	SandboxAllocationUnavailable: http.StatusUnprocessableEntity,
	OperationKeyReuseMismatch:    http.StatusConflict,
	OperationKeyPayloadMismatch:  http.StatusUnprocessableEntity,
	CreationInProgress:           http.StatusConflict,
	TriggerLimitReached:          http.StatusUnprocessableEntity,
	EnvironmentNameTaken:         http.StatusConflict,
	EnvironmentInUse:             http.StatusConflict,
	EnvironmentLimitReached:      http.StatusUnprocessableEntity,
	EnvironmentNotFound:          http.StatusUnprocessableEntity,
	OutcomeAlreadyRecorded:       http.StatusConflict,
	SessionClaimed:               http.StatusConflict,
	SessionEnded:                 http.StatusConflict,
	SessionRecordInvalid:         http.StatusInternalServerError,
	InternalError:                http.StatusInternalServerError,
	UnsupportedMediaType:         http.StatusUnsupportedMediaType,
	RateLimited:                  http.StatusTooManyRequests,
	ServiceUnavailable:           http.StatusServiceUnavailable,
}

// Status is the HTTP status that always goes with the code; an unknown code
// is a 500.
func (c Code) Status() int {
	if s, ok := statuses[c]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Error is a failure the caller is told about: a contract code and a detail
// for people. The detail never holds internals; the cause, if any, is for the
// log only.
type Error struct {
	Code   Code
	Detail string
	// Cause is the underlying failure, logged but never shown.
	Cause error
	// RetryAfter, when set, tells the caller when to try again.
	RetryAfter time.Duration
	// Extension holds the problem's extension members beside its own, by
	// name (contract v7: the recorded outcome, a runner's claim); nil for
	// none.
	Extension map[string]any
}

// With returns a copy of e with the extension member name set to v.
func (e *Error) With(name string, v any) *Error {
	c := *e
	c.Extension = map[string]any{name: v}
	return &c
}

// New returns an error with the code and detail.
func New(code Code, detail string) *Error {
	return &Error{Code: code, Detail: detail}
}

// Wrap returns an error with the code and detail that keeps cause for the log.
func Wrap(code Code, detail string, cause error) *Error {
	return &Error{Code: code, Detail: detail, Cause: cause}
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return string(e.Code) + ": " + e.Detail + ": " + e.Cause.Error()
	}
	return string(e.Code) + ": " + e.Detail
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Cause }

// CodeOf returns the code of the first *Error in err's chain, or
// InternalError when there is none.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return InternalError
}
