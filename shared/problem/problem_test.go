package problem

import (
	"errors"
	"fmt"
	"testing"
)

// TestStatuses holds the contract's table of codes and statuses.
func TestStatuses(t *testing.T) {
	rows := map[Code]int{
		"invalid_request": 400, "payload_too_large": 413, "unauthorized": 401, "forbidden": 403,
		"not_found": 404, "method_not_allowed": 405, "invalid_sandbox_allocation": 400,
		"allocation_routing_conflict": 400, "sandbox_allocation_retired": 422, "sandbox_runtime_retired": 422,
		"sandbox_selection_disabled": 403, "sandbox_allocation_unavailable": 422,
		"operation_key_reuse_mismatch": 409, "operation_key_payload_mismatch": 422, "creation_in_progress": 409,
		"trigger_limit_reached": 422, "session_record_invalid": 500, "internal_error": 500, "unsupported_media_type": 415,
		"rate_limited": 429, "service_unavailable": 503,
		// v7
		"environment_name_taken": 409, "environment_in_use": 409, "environment_limit_reached": 422, "environment_not_found": 422,
		"outcome_already_recorded": 409, "session_claimed": 409, "session_ended": 409,
	}
	if len(rows) != len(statuses) {
		t.Errorf("the contract has %d codes, the code %d", len(rows), len(statuses))
	}
	for code, want := range rows {
		if got := code.Status(); got != want {
			t.Errorf("%s: %d, want %d", code, got, want)
		}
	}
	if Code("nope").Status() != 500 {
		t.Error("an unknown code is a 500")
	}
}

// TestCodeOf: the code of a wrapped problem, internal_error for any other
// error; the cause stays in the chain for the log.
func TestCodeOf(t *testing.T) {
	cause := errors.New("socket closed")
	err := fmt.Errorf("starting: %w", Wrap(ServiceUnavailable, "Try again.", cause))
	if CodeOf(err) != ServiceUnavailable || !errors.Is(err, cause) {
		t.Errorf("CodeOf = %s", CodeOf(err))
	}
	if CodeOf(cause) != InternalError {
		t.Error("a plain error is internal_error")
	}
}
