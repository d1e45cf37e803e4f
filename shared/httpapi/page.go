package httpapi

import (
	"encoding/base64"
	"encoding/json/v2"
	"strconv"
	"time"

	"github.com/cloud-agent/control-plane/shared/ids"
	"github.com/cloud-agent/control-plane/shared/problem"
)

// The contract's pages: limit 1 to 100, 50 when not given.
const (
	defaultLimit = 50
	maxLimit     = 100
)

// PageLimit is the limit of a page the request asks for (the query's
// limit): 1 to 100, 50 when not given; invalid_request otherwise.
func (r *Request) PageLimit() (int, error) {
	v, ok := r.Query("limit")
	if !ok {
		return defaultLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxLimit || strconv.Itoa(n) != v {
		return 0, problem.New(problem.InvalidRequest, "limit must be a whole number from 1 to 100.")
	}
	return n, nil
}

// ErrCursor answers a cursor this API did not return.
var ErrCursor = problem.New(problem.InvalidRequest, "cursor is not a cursor this API returned.")

// EncodeCursor is an opaque cursor of where a page ended: base64url of the
// JSON of v.
func EncodeCursor(v any) *string {
	b, _ := json.Marshal(v)
	c := base64.RawURLEncoding.EncodeToString(b)
	return &c
}

// DecodeCursor reads a cursor into v: ErrCursor when it is none.
func DecodeCursor(s string, v any) error {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(raw, v) != nil {
		return ErrCursor
	}
	return nil
}

// Position is where a page of items listed newest first ended: the last
// item's id and creation.
type Position struct {
	ID        string
	CreatedAt time.Time
}

// positionCursor is a Position as its cursor holds it.
type positionCursor struct {
	ID        string `json:"id"`
	CreatedAt string `json:"createdAt"`
}

// Cursor is p's cursor.
func (p Position) Cursor() *string {
	return EncodeCursor(positionCursor{p.ID, p.CreatedAt.UTC().Format(time.RFC3339Nano)})
}

// After is the position the query's cursor names, nil without one;
// ErrCursor for a cursor that Position.Cursor did not make.
func (r *Request) After() (*Position, error) {
	v, ok := r.Query("cursor")
	if !ok {
		return nil, nil
	}
	var c positionCursor
	if err := DecodeCursor(v, &c); err != nil || !ids.IsPathID(c.ID) {
		return nil, ErrCursor
	}
	created, err := time.Parse(time.RFC3339Nano, c.CreatedAt)
	if err != nil {
		return nil, ErrCursor
	}
	return &Position{ID: c.ID, CreatedAt: created}, nil
}
