// Command triggerhook is the trigger hook function: POST
// /v1/hooks/{triggerId}, a webhook delivery to a trigger, with no caller:
// the delivery proves itself with the trigger's secret.
package main

import (
	"github.com/cloud-agent/control-plane/shared/app"
	"github.com/cloud-agent/control-plane/shared/app/keyed"
)

func main() { keyed.Run(app.TriggerHook) }
