package kms

import (
	"fmt"
	"net/http"
	"strings"
)

// The error types the stand-in answers, as KMS names them in __type.
const (
	errNotFound          = "NotFoundException"
	errInvalidKeyUsage   = "InvalidKeyUsageException"
	errInvalidCiphertext = "InvalidCiphertextException"
	errIncorrectKey      = "IncorrectKeyException"
	errDryRun            = "DryRunOperationException"
	errValidation        = "ValidationException"            // common to AWS's JSON services
	errSerialization     = "SerializationException"         // common: a body that is not the input's JSON
	errUnknownOperation  = "UnknownOperationException"      // common: an X-Amz-Target the stand-in does not serve
	errInternal          = "KMSInternalException"           // the stand-in failed (crypto/rand, say)
	errTooLarge          = "RequestEntityTooLargeException" // a body over the stand-in's own limit
)

// statuses are the HTTP statuses of KMS's errors as AWS's model of KMS
// gives them (the httpError traits of the SDK's schemas: TestStatuses
// holds this table to them); the common errors are 400.
var statuses = map[string]int{
	errNotFound:          http.StatusNotFound,
	errInvalidKeyUsage:   http.StatusBadRequest,
	errInvalidCiphertext: http.StatusBadRequest,
	errIncorrectKey:      http.StatusBadRequest,
	errDryRun:            http.StatusPreconditionFailed,
	errInternal:          http.StatusInternalServerError,
	errValidation:        http.StatusBadRequest,
	errSerialization:     http.StatusBadRequest,
	errUnknownOperation:  http.StatusBadRequest,
	errTooLarge:          http.StatusRequestEntityTooLarge,
}

// apiError is an error answer: its __type, and its message.
type apiError struct {
	typ string
	msg string
}

func (e *apiError) Error() string { return e.typ + ": " + e.msg }

func (e *apiError) status() int { return statuses[e.typ] }

func fail(typ, format string, args ...any) *apiError {
	return &apiError{typ: typ, msg: fmt.Sprintf(format, args...)}
}

// validation gathers a request's constraint violations, each worded as
// AWS words them, into one ValidationException.
type validation []string

func (v *validation) add(format string, args ...any) { *v = append(*v, fmt.Sprintf(format, args...)) }

// required: the member is present (not absent, not null).
func (v *validation) required(member string, present bool) bool {
	if !present {
		v.add("Value null at '%s' failed to satisfy constraint: Member must not be null", member)
	}
	return present
}

// text: a string member's length, in bounds.
func (v *validation) text(member string, s *string, lo, hi int) {
	if s == nil {
		return
	}
	switch n := len([]rune(*s)); {
	case n < lo:
		v.add("Value '%s' at '%s' failed to satisfy constraint: Member must have length greater than or equal to %d", *s, member, lo)
	case n > hi:
		v.add("Value '%s' at '%s' failed to satisfy constraint: Member must have length less than or equal to %d", *s, member, hi)
	}
}

// blob: a binary member's length, in bounds (its value is never quoted:
// it may be a secret).
func (v *validation) blob(member string, b []byte, lo, hi int) {
	if b == nil {
		return
	}
	switch {
	case len(b) < lo:
		v.add("Value at '%s' failed to satisfy constraint: Member must have length greater than or equal to %d", member, lo)
	case len(b) > hi:
		v.add("Value at '%s' failed to satisfy constraint: Member must have length less than or equal to %d", member, hi)
	}
}

// enum: a member's value, one of set.
func (v *validation) enum(member string, s *string, set ...string) {
	if s == nil {
		return
	}
	for _, e := range set {
		if *s == e {
			return
		}
	}
	v.add("Value '%s' at '%s' failed to satisfy constraint: Member must satisfy enum value set: [%s]", *s, member, strings.Join(set, ", "))
}

// grantTokens: at most 10, each of 1 to 8192 characters. The stand-in has
// no grants: a well-formed token changes nothing.
func (v *validation) grantTokens(tokens []string) {
	if len(tokens) > 10 {
		v.add("Value '%v' at 'grantTokens' failed to satisfy constraint: Member must have length less than or equal to 10", tokens)
	}
	for i := range tokens {
		v.text(fmt.Sprintf("grantTokens.%d.member", i+1), &tokens[i], 1, 8192)
	}
}

func (v validation) err() *apiError {
	switch len(v) {
	case 0:
		return nil
	case 1:
		return fail(errValidation, "1 validation error detected: %s", v[0])
	default:
		return fail(errValidation, "%d validation errors detected: %s", len(v), strings.Join(v, "; "))
	}
}
