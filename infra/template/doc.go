// Package template reads template.yaml, the SAM template that is the one
// source of truth for the functions (their builds, environment, routes and
// schedules), the table, the settings and the alarms: its model as the
// local stack and the tests use it (Load, Functions, Routes), the table's
// definition as DynamoDB requests (CreateTableInput, TimeToLiveInput,
// EnsureTable), and the settings a local settings file starts with
// (Settings). Intrinsics resolve as locally: parameters take their
// defaults, and a Ref to a resource is its logical id.
//
// Its tests are the tests of template.yaml: the functions and their
// builds, the schedule, the table and the settings at their built-in
// values (template_test.go), the routes that Go, the template,
// docs/openapi.yaml and events/ must agree on (routes_test.go), the alarms and the dashboard (alarms_test.go, whose
// WantAlarms a new alarm joins), least privilege on the SAM translator's
// output (iam_test.go), who may use the secrets keys, on the same output
// (kms_test.go), the releases through each function's alias and
// CodeDeploy, and the release alarms that see the new version
// (release_test.go), cfn-lint, and a deploy on moto's
// CloudFormation (deploy_test.go). Development and tests only: no
// function imports it.
package template
