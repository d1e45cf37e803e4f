package settings

import (
	"context"
	"encoding/json"
	"time"
)

// sdkAPI is what New needs of the SDK's SSM client (*ssm.Client): its
// GetParametersByPath, with the SDK's input, output and option types as
// type parameters, so that this package does not import the SDK's.
type sdkAPI[In, Out, Opt any] interface {
	GetParametersByPath(context.Context, In, ...func(Opt)) (Out, error)
}

// New returns the settings under path, read with the SDK's SSM client
// (*ssm.Client, which tests and harnesses configure with their own
// endpoint and retries) and cached for ttl. Each page is that client's
// call; its input and output, the SDK's types, are filled and read through
// JSON, by member name.
func New[C sdkAPI[In, Out, Opt], In, Out, Opt any](client C, path string, ttl time.Duration) *Settings {
	return FromReader(sdkReader[In, Out, Opt]{client}, path, ttl)
}

type sdkReader[In, Out, Opt any] struct{ client sdkAPI[In, Out, Opt] }

func (r sdkReader[In, Out, Opt]) ParametersByPath(ctx context.Context, path string) (map[string]string, error) {
	values := map[string]string{}
	token := ""
	for {
		var in In
		if err := convert(pageRequest{Path: path, Recursive: true, NextToken: token}, &in); err != nil {
			return nil, err
		}
		out, err := r.client.GetParametersByPath(ctx, in)
		if err != nil {
			return nil, err
		}
		var page pageResponse
		if err := convert(out, &page); err != nil {
			return nil, err
		}
		for _, p := range page.Parameters {
			values[p.Name] = p.Value
		}
		if page.NextToken == "" {
			return values, nil
		}
		token = page.NextToken
	}
}

// convert fills to from from, member by member of the same JSON name.
func convert(from, to any) error {
	data, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, to)
}
