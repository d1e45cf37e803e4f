// Command environments is the environments function (contract v7): POST
// and GET /v1/environments; GET, PATCH and DELETE
// /v1/environments/{environmentId}.
package main

import (
	"github.com/cloud-agent/control-plane/shared/app"
	"github.com/cloud-agent/control-plane/shared/app/keyed"
)

func main() { keyed.Run(app.Environments) }
