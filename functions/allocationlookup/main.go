// Command allocationlookup is the allocation lookup function:
// GET /v1/sessions/{sessionId}/allocation and GET /v1/allocations.
package main

import "github.com/cloud-agent/control-plane/shared/app"

func main() { app.Run(app.AllocationLookup) }
