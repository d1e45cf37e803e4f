package dynamo

import (
	"slices"
	"sort"

	"github.com/google/uuid"
)

type keySchemaElement struct {
	AttributeName string
	KeyType       string
}

type attributeDefinition struct {
	AttributeName string
	AttributeType string
}

type projectionSpec struct {
	ProjectionType   string
	NonKeyAttributes []string
}

type throughput struct {
	ReadCapacityUnits  *int64
	WriteCapacityUnits *int64
}

type indexSpec struct {
	IndexName             string
	KeySchema             []keySchemaElement
	Projection            *projectionSpec
	ProvisionedThroughput *throughput
}

type createTableInput struct {
	TableName              string
	AttributeDefinitions   []attributeDefinition
	KeySchema              []keySchemaElement
	BillingMode            string
	ProvisionedThroughput  *throughput
	GlobalSecondaryIndexes []indexSpec
	LocalSecondaryIndexes  []indexSpec
	StreamSpecification    *streamSpecification
}

// validName reports whether name is a table's or an index's name as
// DynamoDB takes it: 3 to 255 characters, each of [a-zA-Z0-9_.-].
func validName(name string) bool {
	ok := len(name) >= 3 && len(name) <= 255
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
	}
	return ok
}

// checkTableName refuses a name DynamoDB refuses.
func checkTableName(name string) error {
	if !validName(name) {
		return validationError("1 validation error detected: Value '%s' at 'tableName' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+ and have length between 3 and 255", name)
	}
	return nil
}

// table is the table of that name, or ResourceNotFoundException.
func (db *DB) table(name string) (*table, error) {
	if err := checkTableName(name); err != nil {
		return nil, err
	}
	t, ok := db.tables[name]
	if !ok {
		return nil, tableNotFound(name)
	}
	return t, nil
}

func (db *DB) createTable(in *createTableInput) (any, error) {
	t, err := newTable(in)
	if err != nil {
		return nil, err
	}
	view, err := in.StreamSpecification.view(true)
	if err != nil {
		return nil, err
	}
	t.created = db.now()
	db.mu.Lock()
	defer db.mu.Unlock()
	if _, ok := db.tables[in.TableName]; ok {
		return nil, dynamoError("ResourceInUseException", "Table already exists: %s", in.TableName)
	}
	db.tables[in.TableName] = t
	if view != "" {
		db.enableStream(t, view)
	}
	return map[string]any{"TableDescription": t.describe("CREATING")}, nil
}

// newTable checks a CreateTable request as DynamoDB does and builds its
// empty table.
func newTable(in *createTableInput) (*table, error) {
	if err := checkTableName(in.TableName); err != nil {
		return nil, err
	}
	t := &table{name: in.TableName, id: uuid.NewString(), billing: in.BillingMode, items: newTree()}
	switch in.BillingMode {
	case "", "PROVISIONED":
		t.billing = "PROVISIONED"
		if in.ProvisionedThroughput == nil {
			return nil, invalidParameter("ReadCapacityUnits and WriteCapacityUnits must both be specified when BillingMode is PROVISIONED")
		}
	case "PAY_PER_REQUEST":
		if in.ProvisionedThroughput != nil {
			return nil, invalidParameter("Neither ReadCapacityUnits nor WriteCapacityUnits can be specified when BillingMode is PAY_PER_REQUEST")
		}
	default:
		return nil, validationError("1 validation error detected: Value '%s' at 'billingMode' failed to satisfy constraint: Member must satisfy enum value set: [PROVISIONED, PAY_PER_REQUEST]", in.BillingMode)
	}
	b := &tableBuilder{t: t, types: map[string]kind{}, used: map[string]bool{}}
	for _, a := range in.AttributeDefinitions {
		k := kindNamed(a.AttributeType)
		if k != kindS && k != kindN && k != kindB {
			return nil, validationError("1 validation error detected: Value '%s' at 'attributeDefinitions' failed to satisfy constraint: Member must satisfy enum value set: [B, N, S]", a.AttributeType)
		}
		if _, dup := b.types[a.AttributeName]; dup || a.AttributeName == "" {
			return nil, invalidParameter("Duplicate or empty attribute name in AttributeDefinitions: %q", a.AttributeName)
		}
		b.types[a.AttributeName] = k
		t.attrs = append(t.attrs, keyPart{a.AttributeName, k})
	}
	var err error
	if t.key, err = b.schema(in.KeySchema, "the table"); err != nil {
		return nil, err
	}
	for _, g := range in.GlobalSecondaryIndexes {
		if err := b.addIndex(g, false); err != nil {
			return nil, err
		}
	}
	for _, l := range in.LocalSecondaryIndexes {
		if err := b.addIndex(l, true); err != nil {
			return nil, err
		}
	}
	if len(b.used) != len(b.types) {
		return nil, invalidParameter("Number of attributes in KeySchema does not exactly match number of attributes defined in AttributeDefinitions")
	}
	return t, nil
}

// tableBuilder is a table being built from a CreateTable request: its
// attribute definitions by name, and those a key schema used.
type tableBuilder struct {
	t     *table
	types map[string]kind
	used  map[string]bool
}

// schema is the key schema of the table or an index (what), of defined
// attributes.
func (b *tableBuilder) schema(elems []keySchemaElement, what string) (keySchema, error) {
	var ks keySchema
	if len(elems) == 0 || len(elems) > 2 || elems[0].KeyType != "HASH" || len(elems) == 2 && elems[1].KeyType != "RANGE" {
		return ks, invalidParameter("Invalid KeySchema of %s: a HASH key, then at most one RANGE key", what)
	}
	for i, e := range elems {
		k, ok := b.types[e.AttributeName]
		if !ok {
			return ks, invalidParameter("Some index key attributes are not defined in AttributeDefinitions. Keys: [%s], AttributeDefinitions: %v", e.AttributeName, keysOf(b.types))
		}
		b.used[e.AttributeName] = true
		if i == 0 {
			ks.hash = keyPart{e.AttributeName, k}
		} else if e.AttributeName == ks.hash.name {
			return ks, invalidParameter("Both the Hash Key and the Range Key element in the KeySchema have the same name")
		} else {
			ks.rng = keyPart{e.AttributeName, k}
		}
	}
	return ks, nil
}

// addIndex checks an index of the request and adds it to the table.
func (b *tableBuilder) addIndex(spec indexSpec, local bool) error {
	t := b.t
	if !validName(spec.IndexName) {
		return validationError("Invalid index name %q: [a-zA-Z0-9_.-]+, of 3 to 255 characters", spec.IndexName)
	}
	if t.indexNamed(spec.IndexName) != nil {
		return invalidParameter("Duplicate index name: %s", spec.IndexName)
	}
	ks, err := b.schema(spec.KeySchema, "index "+spec.IndexName)
	if err != nil {
		return err
	}
	if local && (t.key.rng.name == "" || ks.hash != t.key.hash || ks.rng.name == "") {
		return invalidParameter("Table KeySchema does not have a range key, or the local index %s's hash key is not the table's", spec.IndexName)
	}
	if !local && (t.billing == "PAY_PER_REQUEST") != (spec.ProvisionedThroughput == nil) {
		return invalidParameter("ProvisionedThroughput of index %s must be given when, and only when, BillingMode is PROVISIONED", spec.IndexName)
	}
	p := spec.Projection
	if err := checkProjection(spec.IndexName, p); err != nil {
		return err
	}
	x := &index{name: spec.IndexName, local: local, key: ks, projection: p.ProjectionType, include: p.NonKeyAttributes, entries: newTree()}
	for _, n := range slices.Concat(t.key.names(), ks.names(), x.include) {
		if !slices.Contains(x.projected, n) {
			x.projected = append(x.projected, n)
		}
	}
	t.indexes = append(t.indexes, x)
	return nil
}

// checkProjection checks the projection of the index named.
func checkProjection(name string, p *projectionSpec) error {
	if p == nil {
		return invalidParameter("Projection of index %s is missing", name)
	}
	switch p.ProjectionType {
	case "ALL", "KEYS_ONLY":
		if len(p.NonKeyAttributes) > 0 {
			return invalidParameter("ProjectionType is %s, but NonKeyAttributes is specified", p.ProjectionType)
		}
	case "INCLUDE":
		if len(p.NonKeyAttributes) == 0 {
			return invalidParameter("ProjectionType is INCLUDE, but NonKeyAttributes is not specified")
		}
	default:
		return validationError("Unknown ProjectionType: %q", p.ProjectionType)
	}
	return nil
}

func keysOf(m map[string]kind) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// describeKey is a key schema as a description holds it.
func describeKey(k keySchema) []map[string]string {
	out := []map[string]string{{"AttributeName": k.hash.name, "KeyType": "HASH"}}
	if k.rng.name != "" {
		out = append(out, map[string]string{"AttributeName": k.rng.name, "KeyType": "RANGE"})
	}
	return out
}

// describe is the table's description, with status.
func (t *table) describe(status string) map[string]any {
	arn := arnPrefix + t.name
	attrs := []map[string]string{}
	for _, a := range t.attrs {
		attrs = append(attrs, map[string]string{"AttributeName": a.name, "AttributeType": a.kind.String()})
	}
	d := map[string]any{
		"TableName":                 t.name,
		"TableArn":                  arn,
		"TableId":                   t.id,
		"TableStatus":               status,
		"KeySchema":                 describeKey(t.key),
		"AttributeDefinitions":      attrs,
		"CreationDateTime":          float64(t.created.UnixMilli()) / 1000,
		"ItemCount":                 t.items.Len(),
		"TableSizeBytes":            t.itemBytes,
		"DeletionProtectionEnabled": false,
	}
	capacity := map[string]any{"NumberOfDecreasesToday": 0, "ReadCapacityUnits": 0, "WriteCapacityUnits": 0}
	if t.billing == "PAY_PER_REQUEST" {
		d["BillingModeSummary"] = map[string]any{"BillingMode": "PAY_PER_REQUEST", "LastUpdateToPayPerRequestDateTime": d["CreationDateTime"]}
	}
	d["ProvisionedThroughput"] = capacity
	var global, local []map[string]any
	for _, x := range t.indexes {
		proj := map[string]any{"ProjectionType": x.projection}
		if len(x.include) > 0 {
			proj["NonKeyAttributes"] = x.include
		}
		desc := map[string]any{"IndexName": x.name, "KeySchema": describeKey(x.key), "Projection": proj, "IndexArn": arn + "/index/" + x.name,
			"IndexSizeBytes": x.bytes, "ItemCount": x.entries.Len()}
		if x.local {
			local = append(local, desc)
			continue
		}
		desc["IndexStatus"] = "ACTIVE"
		desc["ProvisionedThroughput"] = capacity
		global = append(global, desc)
	}
	if global != nil {
		d["GlobalSecondaryIndexes"] = global
	}
	if local != nil {
		d["LocalSecondaryIndexes"] = local
	}
	t.describeStream(d)
	return d
}

type tableNameInput struct{ TableName string }

func (db *DB) deleteTable(in *tableNameInput) (any, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	t, err := db.table(in.TableName)
	if err != nil {
		return nil, err
	}
	delete(db.tables, in.TableName)
	d := t.describe("DELETING")
	t.disableStream(db.now())
	return map[string]any{"TableDescription": d}, nil
}

func (db *DB) describeTable(in *tableNameInput) (any, error) {
	db.mu.RLock()
	defer db.mu.RUnlock()
	t, err := db.table(in.TableName)
	if err != nil {
		return nil, err
	}
	return map[string]any{"Table": t.describe("ACTIVE")}, nil
}

type listTablesInput struct {
	ExclusiveStartTableName string
	Limit                   *int
}

// listTables answers a page of the tables' names in order: at most Limit
// (1 to 100, 100 when unset) after ExclusiveStartTableName, and the last
// of them as LastEvaluatedTableName when more follow.
func (db *DB) listTables(in *listTablesInput) (any, error) {
	limit := 100
	if in.Limit != nil {
		limit = *in.Limit
	}
	if limit < 1 || limit > 100 {
		return nil, validationError("1 validation error detected: Value '%d' at 'limit' failed to satisfy constraint: Member must have value between 1 and 100", limit)
	}
	db.mu.RLock()
	names := []string{}
	for name := range db.tables {
		if name > in.ExclusiveStartTableName {
			names = append(names, name)
		}
	}
	db.mu.RUnlock()
	slices.Sort(names)
	out := map[string]any{"TableNames": names}
	if len(names) > limit {
		out["TableNames"] = names[:limit]
		out["LastEvaluatedTableName"] = names[limit-1]
	}
	return out, nil
}
