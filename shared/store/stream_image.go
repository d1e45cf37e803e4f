package store

import (
	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/shared/session"
)

// StreamSession reads a session from an image of the table's stream, as
// Lambda hands it (NEW_AND_OLD_IMAGES): nil for an image of another item
// or none, the record otherwise, or the error of DecodeSession.
func StreamSession(image map[string]events.DynamoDBAttributeValue) (*session.Record, error) {
	item := fromStream(image)
	pk, _ := item["PK"].(*types.AttributeValueMemberS)
	sk, _ := item["SK"].(*types.AttributeValueMemberS)
	if pk == nil || sk == nil || !IsSessionKey(pk.Value, sk.Value) {
		return nil, nil
	}
	return DecodeSession(item)
}

// fromStream is a stream image as the SDK's items are.
func fromStream(image map[string]events.DynamoDBAttributeValue) Item {
	if image == nil {
		return nil
	}
	item := make(Item, len(image))
	for name, v := range image {
		item[name] = fromStreamValue(v)
	}
	return item
}

func fromStreamValue(v events.DynamoDBAttributeValue) types.AttributeValue {
	switch v.DataType() {
	case events.DataTypeString:
		return S(v.String())
	case events.DataTypeNumber:
		return &types.AttributeValueMemberN{Value: v.Number()}
	case events.DataTypeBinary:
		return &types.AttributeValueMemberB{Value: v.Binary()}
	case events.DataTypeBoolean:
		return &types.AttributeValueMemberBOOL{Value: v.Boolean()}
	case events.DataTypeMap:
		return M(fromStream(v.Map()))
	case events.DataTypeList:
		list := make([]types.AttributeValue, len(v.List()))
		for i, e := range v.List() {
			list[i] = fromStreamValue(e)
		}
		return &types.AttributeValueMemberL{Value: list}
	case events.DataTypeStringSet:
		return &types.AttributeValueMemberSS{Value: v.StringSet()}
	case events.DataTypeNumberSet:
		return &types.AttributeValueMemberNS{Value: v.NumberSet()}
	case events.DataTypeBinarySet:
		return &types.AttributeValueMemberBS{Value: v.BinarySet()}
	}
	return &types.AttributeValueMemberNULL{Value: true}
}
