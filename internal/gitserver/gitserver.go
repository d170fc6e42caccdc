package gitserver

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/subtle"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// Options tune Start.
type Options struct {
	// User and Password, when User is set, are required as HTTP basic credentials.
	User, Password string
	// Backend is the git-http-backend program; empty finds it with `git --exec-path`.
	Backend string
	// OnPack, when set, is called as each upload-pack request (a fetch, not ls-refs)
	// arrives, before it is served; it may block to stall the response (until
	// hr.Context() is done: the client went away).
	OnPack func(hr *http.Request, r Request)
}

// Request is one request the server answered.
type Request struct {
	Method string
	// Path is the URL path, without the query.
	Path string
	// Command is the protocol v2 command of an upload-pack POST ("fetch", "ls-refs"),
	// empty for other requests.
	Command string
	// Wants are the object IDs a fetch asked for.
	Wants []string
	// RefPrefixes are the ref-prefix arguments of an ls-refs request: what the client
	// asked the server to list (none: every ref).
	RefPrefixes []string
	// Status is the HTTP status sent.
	Status int
	// Bytes counts the response body bytes sent.
	Bytes int64
}

// Server is a running test server.
type Server struct {
	// URL is the base URL ("https://127.0.0.1:PORT"); a repository root/x.git is at
	// URL + "/x.git".
	URL string
	// Root is the directory whose bare repositories are served.
	Root string
	// CAFile holds the server's certificate in PEM, for GIT_SSL_CAINFO.
	CAFile string

	srv  *httptest.Server
	opts Options

	mu       sync.Mutex
	requests []Request
}

// Start serves the bare repositories under root until Close. The temporary certificate
// file goes to a directory of its own under os.TempDir.
func Start(root string, opts Options) (*Server, error) {
	backend := opts.Backend
	if backend == "" {
		out, err := exec.Command("git", "--exec-path").Output()
		if err != nil {
			return nil, fmt.Errorf("gitserver: find git-http-backend: git --exec-path: %w", err)
		}
		backend = filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	}
	if _, err := os.Stat(backend); err != nil {
		return nil, fmt.Errorf("gitserver: %w", err)
	}
	s := &Server{Root: root, opts: opts}
	cgiHandler := &cgi.Handler{
		Path: backend,
		Env: []string{
			"GIT_PROJECT_ROOT=" + root,
			"GIT_HTTP_EXPORT_ALL=1",
			"GIT_CONFIG_NOSYSTEM=1",
			"GIT_CONFIG_GLOBAL=" + os.DevNull,
			"HOME=" + root,
			// What a partial-clone-capable forge (GitHub) allows.
			"GIT_CONFIG_COUNT=3",
			"GIT_CONFIG_KEY_0=uploadpack.allowFilter", "GIT_CONFIG_VALUE_0=true",
			"GIT_CONFIG_KEY_1=uploadpack.allowAnySHA1InWant", "GIT_CONFIG_VALUE_1=true",
			"GIT_CONFIG_KEY_2=safe.directory", "GIT_CONFIG_VALUE_2=*",
		},
		InheritEnv: []string{"PATH"},
	}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.serve(cgiHandler, w, r)
	}))
	s.srv.StartTLS()
	s.URL = s.srv.URL

	dir, err := os.MkdirTemp("", "gitserver-ca-")
	if err != nil {
		s.srv.Close()
		return nil, fmt.Errorf("gitserver: %w", err)
	}
	s.CAFile = filepath.Join(dir, "ca.pem")
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.srv.Certificate().Raw})
	if err := os.WriteFile(s.CAFile, cert, 0o644); err != nil {
		s.srv.Close()
		return nil, fmt.Errorf("gitserver: %w", err)
	}
	return s, nil
}

// Close stops the server and removes its certificate file.
func (s *Server) Close() {
	s.srv.Close()
	os.RemoveAll(filepath.Dir(s.CAFile))
}

// Env is what a git client needs in its environment to trust the server.
func (s *Server) Env() []string {
	return []string{"GIT_SSL_CAINFO=" + s.CAFile}
}

// Requests returns the requests answered so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Reset forgets the requests recorded so far.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
}

func (s *Server) serve(h http.Handler, w http.ResponseWriter, r *http.Request) {
	req := Request{Method: r.Method, Path: r.URL.Path}
	if s.opts.User != "" {
		u, p, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(s.opts.User)) != 1 ||
			subtle.ConstantTimeCompare([]byte(p), []byte(s.opts.Password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="gitserver"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			req.Status = http.StatusUnauthorized
			s.record(req)
			return
		}
	}
	if r.Method == http.MethodPost {
		// net/http/cgi refuses chunked bodies, and git sends large requests (a partial
		// clone's checkout wants thousands of blobs) chunked: give the CGI a length.
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.TransferEncoding = nil
		r.Header.Set("Content-Length", fmt.Sprint(len(body)))
	}
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-upload-pack") {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		req.Command, req.Wants, req.RefPrefixes = parseUploadPack(body, r.Header.Get("Content-Encoding"))
		if req.Command == "fetch" && s.opts.OnPack != nil {
			s.opts.OnPack(r, req)
		}
	}
	cw := &countingWriter{ResponseWriter: w, status: http.StatusOK}
	h.ServeHTTP(cw, r)
	req.Status, req.Bytes = cw.status, cw.n
	s.record(req)
}

func (s *Server) record(r Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r)
}

// parseUploadPack reads a protocol v2 upload-pack request: its command, the object IDs
// it wants and the ref prefixes it asks to list. Git gzips large request bodies.
func parseUploadPack(body []byte, encoding string) (command string, wants, prefixes []string) {
	var rd io.Reader = bytes.NewReader(body)
	if encoding == "gzip" {
		z, err := gzip.NewReader(rd)
		if err != nil {
			return "", nil, nil
		}
		rd = z
	}
	br := bufio.NewReader(rd)
	for {
		line, err := readPkt(br)
		if err != nil {
			break
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(line, "command="):
			command = strings.TrimPrefix(line, "command=")
		case strings.HasPrefix(line, "want "):
			f := strings.Fields(line)
			wants = append(wants, f[1])
		case strings.HasPrefix(line, "ref-prefix "):
			prefixes = append(prefixes, strings.TrimPrefix(line, "ref-prefix "))
		}
	}
	return command, wants, prefixes
}

// readPkt reads one pkt-line; flush and delimiter packets read as "".
func readPkt(r *bufio.Reader) (string, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return "", err
	}
	var n int
	if _, err := fmt.Sscanf(string(hdr[:]), "%04x", &n); err != nil {
		return "", errors.New("bad pkt-line length")
	}
	if n < 4 {
		return "", nil
	}
	buf := make([]byte, n-4)
	if _, err := io.ReadFull(r, buf); err != nil {
		return "", err
	}
	return string(buf), nil
}

type countingWriter struct {
	http.ResponseWriter
	status int
	n      int64
}

func (c *countingWriter) WriteHeader(code int) {
	c.status = code
	c.ResponseWriter.WriteHeader(code)
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n += int64(n)
	return n, err
}

func (c *countingWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
