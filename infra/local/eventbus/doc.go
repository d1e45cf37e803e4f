// Package eventbus stands in for an EventBridge event bus locally (Bus):
// it answers PutEvents over EventBridge's JSON protocol, as the SDK's
// eventbridge client calls it, with EventBridge's limits (10 entries and
// 256 KB a call) and its per-entry errors, and refuses entries for
// another bus. It keeps the last 1,000 events put, each as EventBridge
// hands an event to a target, logs one line per event without the
// session's launch token, and serves them locally (GET /_local/events,
// with after and wait) with faults on demand (POST /_local/events/faults)
// so that entries can be made to fail as EventBridge's may. For
// development and tests only.
package eventbus
