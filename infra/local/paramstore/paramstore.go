// Package paramstore stands in for Parameter Store locally: Server
// answers GetParametersByPath, the one call the functions make, from a
// settings file (settings.ReadFile reads it, Seed writes a new one), and
// Client is a client of it. For development and tests only.
package paramstore

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/cloud-agent/control-plane/shared/settings"
)

// Server answers GetParametersByPath, the one Parameter Store call the
// functions make, from a settings file read at every call
// (settings.ReadFile), so edits apply at the functions' next settings
// refresh. The parameters sit under Path.
type Server struct {
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

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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

// Client is a Parameter Store client of a Server served at endpoint.
func Client(endpoint string) *ssm.Client {
	return ssm.New(ssm.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
	})
}

// Seed writes params (the template's, say) to a new settings file at
// path; a file that exists is kept as it is.
func Seed(path string, params []settings.Parameter) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(params, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
