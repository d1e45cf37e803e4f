package template

import (
	"testing"

	"github.com/cloud-agent/control-plane/infra/local/testkit"
)

// TestSessionEventsStream: the table streams both images to
// SessionEventsFunction through the one event source mapping the contract
// spells out, member for member: a change to any (LATEST, no
// ReportBatchItemFailures, which would make Lambda take a batch with
// failed records for done, fewer retries, a shorter age, another filter or
// destination) fails here.
func TestSessionEventsStream(t *testing.T) {
	tpl := rawTemplate(t)
	if got := testkit.JSON(resourcesOfType(tpl, "AWS::DynamoDB::Table")["SessionsTable"]["StreamSpecification"]); got != `{"StreamViewType":"NEW_AND_OLD_IMAGES"}` {
		t.Errorf("the table's stream: %s", got)
	}
	mappings := resourcesOfType(tpl, "AWS::Lambda::EventSourceMapping")
	want := `{"BatchSize":100,"BisectBatchOnFunctionError":true,` +
		`"DestinationConfig":{"OnFailure":{"Destination":{"Fn::GetAtt":"SessionEventsFailures.Arn"}}},` +
		`"EventSourceArn":{"Fn::GetAtt":"SessionsTable.StreamArn"},` +
		`"FilterCriteria":{"Filters":[{"Pattern":"{\"eventName\": [\"INSERT\", \"MODIFY\"], \"dynamodb\": {\"Keys\": {\"PK\": {\"S\": [{\"prefix\": \"SESSION#\"}]}, \"SK\": {\"S\": [\"METADATA\"]}}}}"}]},` +
		`"FunctionName":{"Ref":"SessionEventsFunction.Alias"},"FunctionResponseTypes":["ReportBatchItemFailures"],` +
		`"MaximumBatchingWindowInSeconds":1,"MaximumRecordAgeInSeconds":21600,"MaximumRetryAttempts":10,"StartingPosition":"TRIM_HORIZON"}`
	if len(mappings) != 1 || testkit.JSON(mappings["SessionEventsStream"]) != want {
		t.Errorf("the mappings: %s\nwant SessionEventsStream: %s", testkit.JSON(mappings), want)
	}
}
