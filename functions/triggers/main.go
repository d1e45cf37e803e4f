// Command triggers is the triggers function: POST and GET /v1/triggers;
// GET, PATCH and DELETE /v1/triggers/{triggerId}; and
// GET /v1/triggers/{triggerId}/runs; POST /v1/triggers/{triggerId}/run;
// POST /v1/triggers/{triggerId}/secret.
package main

import (
	"github.com/cloud-agent/control-plane/shared/app"
	"github.com/cloud-agent/control-plane/shared/app/keyed"
)

func main() { keyed.Run(app.Triggers) }
