// Package ddbjson reads and writes items in DynamoDB JSON, the form that
// `aws dynamodb put-item --item file://…` takes:
// {"PK":{"S":"…"},"n":{"N":"1"},"m":{"M":{…}}}. Fixtures and local seed
// files use it.
package ddbjson

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Item is a DynamoDB item.
type Item = map[string]types.AttributeValue

// Unmarshal reads one item in DynamoDB JSON.
func Unmarshal(data []byte) (Item, error) {
	var raw map[string]json.RawMessage
	if err := strict(data, &raw); err != nil {
		return nil, err
	}
	return readMap(raw)
}

func strict(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return fmt.Errorf("ddbjson: trailing data")
	}
	return nil
}

func readMap(raw map[string]json.RawMessage) (Item, error) {
	item := make(Item, len(raw))
	for name, v := range raw {
		av, err := readValue(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		item[name] = av
	}
	return item, nil
}

func readValue(data []byte) (types.AttributeValue, error) {
	var typed map[string]json.RawMessage
	if err := strict(data, &typed); err != nil {
		return nil, err
	}
	if len(typed) != 1 {
		return nil, fmt.Errorf("ddbjson: an attribute value has exactly one type, got %d", len(typed))
	}
	var av types.AttributeValue
	var err error
	for typ, v := range typed {
		av, err = readTyped(typ, v)
	}
	return av, err
}

func readTyped(typ string, v json.RawMessage) (types.AttributeValue, error) {
	switch typ {
	case "S":
		var s string
		err := strict(v, &s)
		return &types.AttributeValueMemberS{Value: s}, err
	case "N":
		var s string
		err := strict(v, &s)
		return &types.AttributeValueMemberN{Value: s}, err
	case "B":
		var b []byte
		err := strict(v, &b)
		return &types.AttributeValueMemberB{Value: b}, err
	case "BOOL":
		var b bool
		err := strict(v, &b)
		return &types.AttributeValueMemberBOOL{Value: b}, err
	case "NULL":
		var b bool
		err := strict(v, &b)
		return &types.AttributeValueMemberNULL{Value: b}, err
	case "SS":
		var ss []string
		err := strict(v, &ss)
		return &types.AttributeValueMemberSS{Value: ss}, err
	case "NS":
		var ns []string
		err := strict(v, &ns)
		return &types.AttributeValueMemberNS{Value: ns}, err
	case "BS":
		var bs [][]byte
		err := strict(v, &bs)
		return &types.AttributeValueMemberBS{Value: bs}, err
	case "M":
		var raw map[string]json.RawMessage
		if err := strict(v, &raw); err != nil {
			return nil, err
		}
		m, err := readMap(raw)
		return &types.AttributeValueMemberM{Value: m}, err
	case "L":
		var raw []json.RawMessage
		if err := strict(v, &raw); err != nil {
			return nil, err
		}
		l := make([]types.AttributeValue, len(raw))
		for i, e := range raw {
			av, err := readValue(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			l[i] = av
		}
		return &types.AttributeValueMemberL{Value: l}, nil
	}
	return nil, fmt.Errorf("ddbjson: unknown attribute type %q", typ)
}

// Marshal writes an item in DynamoDB JSON.
func Marshal(item Item) ([]byte, error) {
	return json.Marshal(writeMap(item))
}

func writeMap(item Item) map[string]any {
	out := make(map[string]any, len(item))
	for k, v := range item {
		out[k] = writeValue(v)
	}
	return out
}

func writeValue(av types.AttributeValue) map[string]any {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return map[string]any{"S": v.Value}
	case *types.AttributeValueMemberN:
		return map[string]any{"N": v.Value}
	case *types.AttributeValueMemberB:
		return map[string]any{"B": v.Value}
	case *types.AttributeValueMemberBOOL:
		return map[string]any{"BOOL": v.Value}
	case *types.AttributeValueMemberNULL:
		return map[string]any{"NULL": v.Value}
	case *types.AttributeValueMemberSS:
		return map[string]any{"SS": v.Value}
	case *types.AttributeValueMemberNS:
		return map[string]any{"NS": v.Value}
	case *types.AttributeValueMemberBS:
		return map[string]any{"BS": v.Value}
	case *types.AttributeValueMemberM:
		return map[string]any{"M": writeMap(v.Value)}
	case *types.AttributeValueMemberL:
		l := make([]any, len(v.Value))
		for i, e := range v.Value {
			l[i] = writeValue(e)
		}
		return map[string]any{"L": l}
	}
	return map[string]any{"NULL": true}
}
