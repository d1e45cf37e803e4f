package problem

// Members checks the members a body decoded into, in the order they are
// asked for, and keeps the first failure, which Err reports as
// invalid_request.
type Members struct{ err error }

// Fail records that a member is wrong, unless a failure is recorded
// already; detail completes the sentence ("is required").
func (m *Members) Fail(name, detail string) {
	if m.err == nil {
		m.err = New(InvalidRequest, name+" "+detail+".")
	}
}

// Required is a string member that must be sent (null is not sent).
func (m *Members) Required(name string, v *string) string {
	if v == nil {
		m.Fail(name, "is required")
		return ""
	}
	return *v
}

// Optional is a string member that, when sent, may not be empty; "" when
// it was not.
func (m *Members) Optional(name string, v *string) string {
	if v != nil && *v == "" {
		m.Fail(name, "may not be empty")
	}
	if v == nil {
		return ""
	}
	return *v
}

// RequiredObject reports whether an object member that must be sent was
// (null is not sent), failing when it was not.
func (m *Members) RequiredObject(name string, sent bool) bool {
	if !sent {
		m.Fail(name, "is required")
	}
	return sent
}

// Err is the first failure, or nil.
func (m *Members) Err() error { return m.err }
