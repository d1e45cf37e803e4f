package dynamo

import "time"

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

// SetClock makes db read the time from now; call it before db serves.
func SetClock(db *DB, now func() time.Time) { db.now = now }

// SetStreamCap makes db's streams keep at most n records each; call it
// before db serves.
func SetStreamCap(db *DB, n int) { db.streamCap = n }
