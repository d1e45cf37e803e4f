// Package webhook owns what a webhook delivery means apart from its
// transport: the proofs of the three verify modes (GitHub's signature,
// Standard Webhooks, a token), the delivery's identity and event, the
// generated secret's derivation input and text form, and the prompt
// template a delivery renders.
//
// It is pure: no I/O, no AWS, no clock of its own. Callers pass the raw
// body, the headers as API Gateway's payload 2.0 gives them (names
// lowercased, a repeated header's values joined by commas) and the time.
package webhook
