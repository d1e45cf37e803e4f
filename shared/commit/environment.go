package commit

import (
	"context"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/environment"
	"github.com/cloud-agent/control-plane/shared/invocation"
	"github.com/cloud-agent/control-plane/shared/start"
)

// EnvironmentFallbacks counts a start whose environment's saved allocation
// falls back to the default (a trigger's run counts under the firing's
// Fallbacks, or its run's status).
const EnvironmentFallbacks = "EnvironmentFallbacks"

// inEnvironment is cmd resolved in its environment as one read finds it
// (start.Command.InEnvironment): a saved allocation that falls back is a
// warning on the line, and counted.
func (s *Executor) inEnvironment(ctx context.Context, cmd start.Command, policy *allocation.Policy) (start.Command, error) {
	found, err := s.Table.ReadEnvironments(ctx, []environment.Source{cmd.Source()})
	if err != nil {
		return cmd, err
	}
	cmd, choice := cmd.InEnvironment(found, policy)
	if choice.FellBack() {
		invocation.Warn(ctx, "the environment's saved allocation falls back to the default: "+choice.Fallback.Reason)
		invocation.Add(ctx, invocation.Count(EnvironmentFallbacks, 1))
	}
	return cmd, nil
}
