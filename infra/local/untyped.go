package local

// typeResponse types the untyped values of every item a response carries.
// The embedded endpoint's minidyn writes an empty list or map attribute as
// an untyped {} (real DynamoDB keeps {"L":[]} and {"M":{}}). An untyped
// value is not DynamoDB JSON, and the SDK's deserializer then reads it as
// a neighbouring attribute's value. Such values are answered as
// {"NULL":true} instead: the type is lost either way, and NULL is the one
// reading that shows nothing that is not there.
func typeResponse(doc map[string]any) {
	items := func(v any) {
		list, _ := v.([]any)
		for _, it := range list {
			typeItem(it)
		}
	}
	typeItem(doc["Item"])
	typeItem(doc["Attributes"])
	items(doc["Items"])
	switch rs := doc["Responses"].(type) {
	case []any: // TransactGetItems: [{"Item":…}]
		for _, x := range rs {
			if m, ok := x.(map[string]any); ok {
				typeItem(m["Item"])
			}
		}
	case map[string]any: // BatchGetItem: {"<table>":[…]}
		for _, list := range rs {
			items(list)
		}
	}
	reasons, _ := doc["CancellationReasons"].([]any)
	for _, x := range reasons {
		if m, ok := x.(map[string]any); ok {
			typeItem(m["Item"])
		}
	}
}

// typeItem types each attribute value of an item.
func typeItem(v any) {
	item, _ := v.(map[string]any)
	for k, av := range item {
		item[k] = typed(av)
	}
}

// typed is an attribute value with every untyped {} in it, at any depth of
// maps and lists, made {"NULL":true}.
func typed(v any) any {
	av, ok := v.(map[string]any)
	switch {
	case !ok:
		return v
	case len(av) == 0:
		return map[string]any{"NULL": true}
	}
	if m, ok := av["M"].(map[string]any); ok {
		typeItem(m)
	}
	if list, ok := av["L"].([]any); ok {
		for i, e := range list {
			list[i] = typed(e)
		}
	}
	return av
}
