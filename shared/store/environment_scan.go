package store

import (
	"context"
	"time"

	"github.com/cloud-agent/control-plane/shared/environment"
)

// ClearEnvironmentAllocation removes the saved allocation of an
// environment as seen, so that a start that names no allocation runs on
// the effective default, as it already does when the saved one falls
// back. It is a change of content: the version moves on by one and
// updatedAt to now. WriteEnvironment writes it, on the condition that the
// environment is as seen (its version, which every change of content
// moves on, and its count of triggers). The owner's default pointer,
// read strongly consistent first, goes with it in the same transaction:
// when it names the environment, its copy is written on the condition
// that it still does; when it names another or none, the transaction
// checks that it still does not name this one. Either condition failing
// is ErrEnvironmentMoved: read the environment again and judge again. An
// environment with nothing saved is not written.
func (t *Table) ClearEnvironmentAllocation(ctx context.Context, seen *environment.Environment, now time.Time) error {
	def, err := t.DefaultEnvironment(ctx, seen.OwnerUserID, seen.OrgID)
	if err != nil {
		return err
	}
	next := *seen
	next.SavedAllocation, next.SavedRequest = "", nil
	next.Version++
	next.UpdatedAt = now.UTC().Truncate(time.Second)
	isDefault := def == seen.ID
	return t.WriteEnvironment(ctx, EnvironmentChange{Seen: seen, Next: &next, WasDefault: isDefault, IsDefault: isDefault})
}
