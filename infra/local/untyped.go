package local

import (
	"bytes"
	"encoding/json"
	"hash/crc32"
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
// there. It also sends the CRC32 of the body in X-Amz-Crc32, as real
// DynamoDB does and the SDK checks.
func typedValues(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		var doc map[string]any
		d := json.NewDecoder(bytes.NewReader(body))
		d.UseNumber() // numbers pass through digit for digit
		if bytes.Contains(body, []byte("{}")) && d.Decode(&doc) == nil {
			typeResponse(doc)
			body, _ = json.Marshal(doc)
		}
		for k, vs := range rec.Header() {
			w.Header()[k] = vs
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	})
}

// typeResponse types the untyped values of every item a response carries.
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
