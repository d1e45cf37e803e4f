package dynamo

// The firing's requests, for the benchmark over HTTP (package dynamo_test).
var (
	FiringSetup = func() (ops []string, bodies [][]byte) {
		for _, r := range firingSetup() {
			ops, bodies = append(ops, r.op), append(bodies, r.body)
		}
		return ops, bodies
	}
	FiredBody  = firedBody
	ShardQuery = shardQuery
	SDKHeader  = sdkHeader
)

// FiringTriggers is the number of due triggers the firing's requests meet.
const FiringTriggers = firingTriggers
