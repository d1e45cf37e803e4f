// Command triggerfire is the trigger firing function: every minute, an
// EventBridge schedule invokes it to start the sessions of due triggers.
package main

import (
	"os"

	"github.com/cloud-agent/control-plane/shared/commit"
	"github.com/cloud-agent/control-plane/shared/firing"
	"github.com/cloud-agent/control-plane/shared/lambdaenv"
	"github.com/cloud-agent/control-plane/shared/triggerrun"
)

func main() {
	lambdaenv.Start(func(env *lambdaenv.Env) (any, error) {
		concurrency, err := firing.ParseConcurrency(os.Getenv(firing.VarConcurrency))
		if err != nil {
			return nil, err
		}
		f := &firing.Firing{
			Table: env.Table, Settings: env.Settings, Log: env.Log, Concurrency: concurrency, Metrics: env.Metrics,
			Runs: &triggerrun.Runner{Start: &commit.Executor{Table: env.Table, Settings: env.Settings}, Table: env.Table},
		}
		return f.Handle, nil
	})
}
