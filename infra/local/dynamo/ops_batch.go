package dynamo

type batchWriteItemInput struct {
	RequestItems map[string][]struct {
		PutRequest    *struct{ Item item }
		DeleteRequest *struct{ Key item }
	}
}

// batchWriteItem writes up to 25 puts and deletes, without conditions;
// none is ever left unprocessed.
func (db *DB) batchWriteItem(in *batchWriteItemInput) (any, error) {
	n := 0
	var writes []*write
	for name, reqs := range in.RequestItems {
		if err := checkTableName(name); err != nil {
			return nil, err
		}
		if len(reqs) == 0 {
			return nil, validationError("1 validation error detected: Value at 'requestItems' failed to satisfy constraint: Map value must satisfy constraint: [Member must have length less than or equal to 25, Member must have length greater than or equal to 1]")
		}
		for _, r := range reqs {
			switch {
			case (r.PutRequest == nil) == (r.DeleteRequest == nil):
				return nil, validationError("A WriteRequest must have exactly one of PutRequest and DeleteRequest")
			case r.PutRequest != nil:
				writes = append(writes, &write{op: opPut, table: name, put: r.PutRequest.Item})
			default:
				writes = append(writes, &write{op: opDelete, table: name, key: r.DeleteRequest.Key})
			}
			n++
		}
	}
	if n == 0 || n > 25 {
		return nil, validationError("1 validation error detected: Value at 'requestItems' failed to satisfy constraint: Member must have length less than or equal to 25, and greater than or equal to 1")
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	// Every request is checked before any is applied: DynamoDB refuses a
	// batch with an invalid request, or two on one item, as a whole.
	var j judged
	for _, w := range writes {
		t, _, after, err := db.apply(w)
		if err != nil {
			return nil, err
		}
		if !j.once(t, w) {
			return nil, invalidParameter("Provided list of item keys contains duplicates")
		}
		j.add(t, w.key, after)
	}
	j.commit()
	return map[string]any{"UnprocessedItems": map[string]any{}}, nil
}

type keysAndProjection struct {
	Keys                     []item
	ProjectionExpression     *string
	ExpressionAttributeNames map[string]string
	ConsistentRead           bool
	legacy
}

type batchGetItemInput struct {
	RequestItems map[string]keysAndProjection
}

// batchGetItem reads up to 100 items; none is ever left unprocessed.
func (db *DB) batchGetItem(in *batchGetItemInput) (any, error) {
	n := 0
	projections := map[string]*projection{}
	for name, r := range in.RequestItems {
		if err := checkTableName(name); err != nil {
			return nil, err
		}
		if err := r.legacy.check(); err != nil {
			return nil, err
		}
		if len(r.Keys) == 0 {
			return nil, validationError("1 validation error detected: Value at 'requestItems.%s.member.keys' failed to satisfy constraint: Member must have length greater than or equal to 1", name)
		}
		p, err := parseGet(r.ProjectionExpression, r.ExpressionAttributeNames)
		if err != nil {
			return nil, err
		}
		projections[name] = p
		n += len(r.Keys)
	}
	if n == 0 || n > 100 {
		return nil, validationError("Too many items requested for the BatchGetItem call")
	}
	responses := map[string][]item{}
	db.mu.RLock()
	for name, r := range in.RequestItems {
		t, err := db.table(name)
		if err != nil {
			db.mu.RUnlock()
			return nil, err
		}
		seen := map[string]bool{}
		list := []item{}
		for _, k := range r.Keys {
			if err := t.checkKey(k); err != nil {
				db.mu.RUnlock()
				return nil, err
			}
			id := string(appendItem(nil, k))
			if seen[id] {
				db.mu.RUnlock()
				return nil, invalidParameter("Provided list of item keys contains duplicates")
			}
			seen[id] = true
			if it := t.get(k); it != nil {
				list = append(list, it)
			}
		}
		responses[name] = list
	}
	db.mu.RUnlock()
	for name, list := range responses {
		if p := projections[name]; p != nil {
			for i, it := range list {
				list[i] = p.apply(it)
			}
		}
	}
	return map[string]any{"Responses": responses, "UnprocessedKeys": map[string]any{}}, nil
}

type transactGetItemsInput struct {
	TransactItems []struct {
		Get *struct {
			TableName                string
			Key                      item
			ProjectionExpression     *string
			ExpressionAttributeNames map[string]string
		}
	}
}

// transactGetItems reads up to 100 items as of one moment.
func (db *DB) transactGetItems(in *transactGetItemsInput) (any, error) {
	n := len(in.TransactItems)
	if n == 0 || n > 100 {
		return nil, validationError("1 validation error detected: Value at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to 100, and greater than or equal to 1")
	}
	projections := make([]*projection, n)
	for i, ti := range in.TransactItems {
		if ti.Get == nil {
			return nil, validationError("1 validation error detected: Value null at 'transactItems.%d.member.get' failed to satisfy constraint: Member must not be null", i+1)
		}
		if err := checkTableName(ti.Get.TableName); err != nil {
			return nil, err
		}
		p, err := parseGet(ti.Get.ProjectionExpression, ti.Get.ExpressionAttributeNames)
		if err != nil {
			return nil, err
		}
		projections[i] = p
	}
	items := make([]item, n)
	db.mu.RLock()
	for i, ti := range in.TransactItems {
		t, err := db.table(ti.Get.TableName)
		if err == nil {
			err = t.checkKey(ti.Get.Key)
		}
		if err != nil {
			db.mu.RUnlock()
			return nil, err
		}
		items[i] = t.get(ti.Get.Key)
	}
	db.mu.RUnlock()
	responses := make([]map[string]any, n)
	for i, it := range items {
		responses[i] = map[string]any{}
		if it != nil {
			if projections[i] != nil {
				it = projections[i].apply(it)
			}
			responses[i]["Item"] = it
		}
	}
	return map[string]any{"Responses": responses}, nil
}
