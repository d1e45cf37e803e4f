package local

import (
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/cloud-agent/control-plane/shared/settings"
)

// Parameter is one setting in the local settings file, named relative to
// the configuration path (e.g. "allocation/default").
type Parameter = settings.Parameter

// SSM answers GetParametersByPath, the one Parameter Store call the
// functions make, from a settings file read at every call
// (settings.ReadFile), so edits apply at the functions' next settings
// refresh. The parameters sit under Path.
type SSM struct {
	File string
	Path string
}

type ssmParameter struct {
	Name     string `json:"Name"`
	Type     string `json:"Type"`
	Value    string `json:"Value"`
	Version  int    `json:"Version"`
	DataType string `json:"DataType"`
}

func (s *SSM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	if r.Header.Get("X-Amz-Target") != "AmazonSSM.GetParametersByPath" {
		ssmError(w, http.StatusBadRequest, "UnknownOperationException", "only GetParametersByPath is served locally")
		return
	}
	var in struct {
		Path       string
		Recursive  bool
		MaxResults int
		NextToken  string
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		ssmError(w, http.StatusBadRequest, "ValidationException", err.Error())
		return
	}
	params, err := settings.ReadFile(s.File)
	if err != nil {
		ssmError(w, http.StatusInternalServerError, "InternalServerError", err.Error())
		return
	}
	prefix := strings.TrimSuffix(in.Path, "/") + "/"
	var matched []ssmParameter
	for _, p := range params {
		name := strings.TrimSuffix(s.Path, "/") + "/" + p.Name
		rest, ok := strings.CutPrefix(name, prefix)
		if ok && (in.Recursive || !strings.Contains(rest, "/")) {
			matched = append(matched, ssmParameter{name, p.Type, p.Value, 1, "text"})
		}
	}
	sort.Slice(matched, func(i, j int) bool { return matched[i].Name < matched[j].Name })
	start, _ := strconv.Atoi(in.NextToken)
	size := in.MaxResults
	if size <= 0 || size > 10 {
		size = 10
	}
	out := struct {
		Parameters []ssmParameter
		NextToken  string `json:",omitempty"`
	}{Parameters: []ssmParameter{}}
	if start < len(matched) {
		end := min(start+size, len(matched))
		out.Parameters = matched[start:end]
		if end < len(matched) {
			out.NextToken = strconv.Itoa(end)
		}
	}
	_ = json.NewEncoder(w).Encode(out)
}

func ssmError(w http.ResponseWriter, status int, typ, msg string) {
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
}

// SSMClient is a Parameter Store client of a settings stand-in (SSM)
// served at endpoint.
func SSMClient(endpoint string) *ssm.Client {
	return ssm.New(ssm.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
	})
}
