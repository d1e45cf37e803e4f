// Command sessionstart is the session start function: POST /v1/sessions.
package main

import "github.com/cloud-agent/control-plane/shared/app"

func main() { app.Run(app.SessionStart) }
