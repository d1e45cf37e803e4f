// Command triggerfire is the trigger firing function: every minute, an
// EventBridge schedule invokes it to start the sessions of due triggers.
package main

import "github.com/cloud-agent/control-plane/shared/app"

func main() { app.Run(app.TriggerFire) }
