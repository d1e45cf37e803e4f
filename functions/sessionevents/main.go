// Command sessionevents is the session events function (contract v7): it
// reads the table's stream and announces each new session (Session
// Started) and each recorded outcome (Session Ended) on the sessions'
// bus.
package main

import (
	"github.com/cloud-agent/control-plane/shared/app"
	"github.com/cloud-agent/control-plane/shared/app/keyed"
)

func main() { keyed.Run(app.SessionEvents) }
