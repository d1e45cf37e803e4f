// Package local is the stack behind `make run`, for development and tests
// only: it reads template.yaml (infra/template), serves the embedded
// DynamoDB endpoint (dynamo) or uses another, creates the template's table
// and loads the data file (localdb), seeds and serves the settings file as
// Parameter Store (paramstore), serves KMS's calls with the keys of its
// key file (kms), builds every function and runs it under the Lambda
// runtime interface emulator (lambdarun), runs the schedules (schedule),
// and serves the HTTP API through the gateway (gateway). Its subpackages
// hold those rooms and the test harnesses (apitest, dynamotest,
// faultproxy, emftest, motoserver, childproc). No function imports any of
// it.
package local
