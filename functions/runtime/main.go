// Command runtime is the runtime routes' function (contract v7): the
// execution plane reads what a session was started with, claims it and
// keeps its claim alive, and reports how its run ended, with the
// session's own token.
package main

import (
	"github.com/cloud-agent/control-plane/shared/app"
	"github.com/cloud-agent/control-plane/shared/app/keyed"
)

func main() { keyed.Run(app.Runtime) }
