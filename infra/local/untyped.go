package local

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
)

// typedValues wraps the embedded endpoint, which writes an empty list or
// map attribute as an untyped {} (real DynamoDB keeps {"L":[]} and
// {"M":{}}). An untyped value is not DynamoDB JSON, and the SDK's
// deserializer then reads it as a neighbouring attribute's value. The
// wrapper answers such values as {"NULL":true} instead: the type is lost
// either way, and NULL is the one reading that shows nothing that is not
// there.
func typedValues(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		var doc map[string]any
		if bytes.Contains(body, []byte("{}")) && json.Unmarshal(body, &doc) == nil && fixResponse(doc) {
			body, _ = json.Marshal(doc)
		}
		for k, vs := range rec.Header() {
			w.Header()[k] = vs
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	})
}

// fixResponse types the untyped values of every item a response carries.
func fixResponse(doc map[string]any) (changed bool) {
	fixItem := func(v any) {
		if item, ok := v.(map[string]any); ok {
			changed = fixItemValues(item) || changed
		}
	}
	fixItems := func(v any) {
		if items, ok := v.([]any); ok {
			for _, it := range items {
				fixItem(it)
			}
		}
	}
	fixItem(doc["Item"])
	fixItem(doc["Attributes"])
	fixItems(doc["Items"])
	switch rs := doc["Responses"].(type) {
	case []any: // TransactGetItems
		for _, x := range rs {
			if m, ok := x.(map[string]any); ok {
				fixItem(m["Item"])
			}
		}
	case map[string]any: // BatchGetItem
		for _, items := range rs {
			fixItems(items)
		}
	}
	if reasons, ok := doc["CancellationReasons"].([]any); ok {
		for _, x := range reasons {
			if m, ok := x.(map[string]any); ok {
				fixItem(m["Item"])
			}
		}
	}
	return changed
}

func fixItemValues(m map[string]any) (changed bool) {
	for k, v := range m {
		av, ok := v.(map[string]any)
		if !ok {
			continue
		}
		if len(av) == 0 {
			m[k] = map[string]any{"NULL": true}
			changed = true
			continue
		}
		changed = fixNested(av) || changed
	}
	return changed
}

func fixNested(av map[string]any) (changed bool) {
	if inner, ok := av["M"].(map[string]any); ok {
		changed = fixItemValues(inner)
	}
	if list, ok := av["L"].([]any); ok {
		for i, e := range list {
			em, ok := e.(map[string]any)
			if !ok {
				continue
			}
			if len(em) == 0 {
				list[i] = map[string]any{"NULL": true}
				changed = true
				continue
			}
			changed = fixNested(em) || changed
		}
	}
	return changed
}
