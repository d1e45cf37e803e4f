package dynamo

type updateTimeToLiveInput struct {
	TableName               string
	TimeToLiveSpecification *struct {
		AttributeName string
		Enabled       *bool
	}
}

// updateTimeToLive sets a table's time to live, refusing, as DynamoDB
// does, to enable it twice or disable it when it is not enabled on that
// attribute. It takes effect at once (DynamoDB takes up to an hour).
func (db *DB) updateTimeToLive(in *updateTimeToLiveInput) (any, error) {
	spec := in.TimeToLiveSpecification
	if spec == nil || spec.AttributeName == "" || spec.Enabled == nil {
		return nil, validationError("TimeToLiveSpecification needs AttributeName and Enabled")
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	t, err := db.table(in.TableName)
	switch {
	case err != nil:
		return nil, err
	case *spec.Enabled && t.ttl != "":
		return nil, validationError("TimeToLive is already enabled")
	case !*spec.Enabled && t.ttl == "":
		return nil, validationError("TimeToLive is already disabled")
	case !*spec.Enabled && t.ttl != spec.AttributeName:
		return nil, validationError("TimeToLive is active on a different AttributeName: current AttributeName is %s", t.ttl)
	}
	t.ttl = ""
	if *spec.Enabled {
		t.ttl = spec.AttributeName
	}
	return map[string]any{"TimeToLiveSpecification": map[string]any{"AttributeName": spec.AttributeName, "Enabled": *spec.Enabled}}, nil
}

func (db *DB) describeTimeToLive(in *tableNameInput) (any, error) {
	db.mu.RLock()
	defer db.mu.RUnlock()
	t, err := db.table(in.TableName)
	if err != nil {
		return nil, err
	}
	d := map[string]any{"TimeToLiveStatus": "DISABLED"}
	if t.ttl != "" {
		d = map[string]any{"TimeToLiveStatus": "ENABLED", "AttributeName": t.ttl}
	}
	return map[string]any{"TimeToLiveDescription": d}, nil
}

// Sweep deletes the items whose time to live has passed, a few at a time
// so that requests wait for it no longer than for a small write, and
// returns how many it deleted. DynamoDB deletes them within days of their
// time; until then reads return them, and the product judges expiry itself.
// A table's stream records each deletion as a REMOVE by the service. The
// streams' records older than 24 hours go too, and the streams disabled
// more than 24 hours ago.
func (db *DB) Sweep() int {
	const batch = 256
	db.sweepStreams()
	x := expiryAt(db.now())
	deleted := 0
	db.mu.RLock()
	names := make([]string, 0, len(db.tables))
	for n := range db.tables {
		names = append(names, n)
	}
	db.mu.RUnlock()
	for _, n := range names {
		var after *entry
		for {
			db.mu.Lock()
			t, ok := db.tables[n]
			if !ok || t.ttl == "" {
				db.mu.Unlock()
				break
			}
			var expired []item
			seen := 0
			visit := func(e *entry) bool {
				if after != nil && !lessEntry(after, e) {
					return true
				}
				after = e
				if t.expired(e.it, x) {
					expired = append(expired, e.it)
				}
				seen++
				return seen < batch
			}
			if after == nil {
				t.items.Ascend(visit)
			} else {
				t.items.AscendGreaterOrEqual(after, visit)
			}
			for _, it := range expired {
				old := t.remove(it)
				if t.stream != nil {
					t.stream.change(old, nil, true)
				}
			}
			deleted += len(expired)
			db.mu.Unlock()
			if seen < batch {
				break
			}
		}
	}
	return deleted
}
