// Package local is the stack behind `make run`, for development only: an
// embedded DynamoDB-compatible endpoint and the table created from
// template.yaml. No function imports it.
package local
