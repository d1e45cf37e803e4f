package faultproxy_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/infra/local/faultproxy"
)

// slowBody is a request body whose second half comes after a pause.
type slowBody struct {
	parts [][]byte
	pause time.Duration
}

func (s *slowBody) Read(p []byte) (int, error) {
	if len(s.parts) == 0 {
		return 0, io.EOF
	}
	if len(s.parts) == 1 {
		time.Sleep(s.pause)
	}
	n := copy(p, s.parts[0])
	if s.parts[0] = s.parts[0][n:]; len(s.parts[0]) == 0 {
		s.parts = s.parts[1:]
	}
	return n, nil
}

// TestAnswerBeforeBody: an endpoint that answers before the whole request
// has reached it (as DynamoDB may once it has read what it needs) has its
// answer passed on whole, and the request's body too: the proxy still
// reads the client's body once it has begun writing the answer.
func TestAnswerBeforeBody(t *testing.T) {
	answer := strings.Repeat("x", 256<<10)
	got := make(chan string, 1)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := http.NewResponseController(w).EnableFullDuplex(); err != nil {
			t.Error(err)
		}
		w.Header().Set("Content-Length", "262144")
		_, _ = io.WriteString(w, answer[:64<<10])
		w.(http.Flusher).Flush()
		body, _ := io.ReadAll(r.Body)
		got <- string(body)
		_, _ = io.WriteString(w, answer[64<<10:])
	}))
	t.Cleanup(backend.Close)
	p := faultproxy.New(backend.URL)
	t.Cleanup(p.Close)
	sent := strings.Repeat("a", 8<<10) + strings.Repeat("b", 8<<10)
	req, err := http.NewRequest("POST", p.URL(), &slowBody{parts: [][]byte{[]byte(sent[:8<<10]), []byte(sent[8<<10:])}, pause: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(sent))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil || !bytes.Equal(out, []byte(answer)) {
		t.Errorf("the answer: %d of %d bytes, %v", len(out), len(answer), err)
	}
	if body := <-got; body != sent {
		t.Errorf("the endpoint read %d of %d bytes of the request", len(body), len(sent))
	}
}
