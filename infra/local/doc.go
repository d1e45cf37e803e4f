// Package local is the stack behind `make run`, for development and tests
// only: the embedded DynamoDB-compatible endpoint and the table created from
// template.yaml, the gateway that routes the template's HttpApi events to
// the functions' bootstraps under the Lambda runtime interface emulator,
// the functions' schedules, and the settings stand-in that answers
// Parameter Store's GetParametersByPath from a file; and the strict reading
// of items in DynamoDB JSON (UnmarshalItem) that its data file and the
// tests' fixtures share. No function imports it.
package local
