package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/streamhttp"
)

// serverConfig is what the measuring process asks of its server.
type serverConfig struct {
	subResources bool
	maxSettings  int // listen.Options.MaxSettingsBytes (where it exists)
	maxSegments  int // listen.Options.MaxURISegments (where it exists)
	sendBuffer   int // SO_SNDBUF of each accepted listen connection; 0: the kernel's
}

// serve runs the server: the listen Handler on a hub at /mcp (HTTP/1.1 and
// h2c on one TCP listener, HTTP/2 over TLS on a second one, HTTP/1.1 on a
// Unix socket), a handler that only reads the body at /body, and the
// control endpoints under /ctl/. It prints "tcp tls unix" addresses on one
// line, then serves until its standard input closes (the measuring process
// ended), and exits. Its goroutines live as long as the process.
func serve(cfg serverConfig) error {
	h, err := hub.New(hub.Options{MaxBuffer: 1000})
	if err != nil {
		return err
	}
	opts := streamhttp.Options{
		MaxStreams:   100_000,
		KeepAlive:    time.Hour,
		MaxBodyBytes: 1 << 20,
		Listen: listen.Options{
			Capabilities: listen.Capabilities{
				ToolsListChanged: true, ResourcesSubscribe: true,
				Extensions: map[string]any{extID: map[string]any{}},
			},
		},
	}
	if cfg.subResources {
		opts.Listen.SubResources = &listen.SubResources{}
	}
	setLimits(&opts.Listen, cfg.maxSettings, cfg.maxSegments)
	reg, err := listen.NewExtensionRegistry(watchExt{})
	if err != nil {
		return err
	}
	opts.Listen.Extensions = reg
	lh, err := streamhttp.New(h, opts)
	if err != nil {
		return err
	}
	var served atomic.Int64 // requests to /mcp or /body whose handler returned
	mux := http.NewServeMux()
	mux.Handle("/mcp", counted(&served, lh))
	mux.Handle("/body", counted(&served, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	})))
	mux.HandleFunc("/ctl/publish", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.FormValue("n"))
		pad := strings.Repeat("x", atoi(r.FormValue("pad")))
		for i := range n {
			var ev listen.Event
			if r.FormValue("kind") == "ext" {
				ev = listen.ExtensionEvent(extID, listen.Filter{"watch": true}, map[string]any{"seq": i, "pad": pad})
			} else {
				ev = listen.ToolsListChanged().WithParams(map[string]any{"seq": i, "pad": pad})
			}
			if _, err := h.Publish(ev); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
	})
	mux.HandleFunc("/ctl/stats", func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("gc") != "" {
			runtime.GC()
			runtime.GC()
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		st := lh.Stats()
		_ = json.NewEncoder(w).Encode(stats{
			Opened: st.Opened, Active: st.Active, Served: served.Load(),
			Goroutines: runtime.NumGoroutine(), HeapAlloc: ms.HeapAlloc,
		})
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	srv.Protocols.SetHTTP2(true)
	srv.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: 1000}

	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	cert, err := selfSigned()
	if err != nil {
		return err
	}
	sock := fmt.Sprintf("%s/ampbench-%d.sock", os.TempDir(), os.Getpid())
	_ = os.Remove(sock)
	ul, err := net.Listen("unix", sock)
	if err != nil {
		return err
	}
	defer os.Remove(sock)
	// The three Serve goroutines end when srv.Close below closes their
	// listeners.
	go func() { _ = srv.Serve(bufListener{tcp, cfg.sendBuffer}) }()
	go func() {
		_ = srv.Serve(tls.NewListener(tl, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}}))
	}()
	go func() { _ = srv.Serve(bufListener{ul, cfg.sendBuffer}) }()
	fmt.Printf("%s %s %s\n", tcp.Addr(), tl.Addr(), sock)
	_, _ = io.Copy(io.Discard, os.Stdin) // until the benchmark closes our standard input
	_ = srv.Close()                      // the process ends next: what is still open is dropped
	return nil
}

// stats is what /ctl/stats reports.
type stats struct {
	Opened     uint64
	Active     int
	Served     int64
	Goroutines int
	HeapAlloc  uint64
}

func counted(n *atomic.Int64, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer n.Add(1)
		h.ServeHTTP(w, r)
	})
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// bufListener sets the send buffer of every accepted connection.
type bufListener struct {
	net.Listener
	send int
}

func (l bufListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil && l.send > 0 {
		if b, ok := c.(interface{ SetWriteBuffer(int) error }); ok {
			_ = b.SetWriteBuffer(l.send)
		}
	}
	return c, err
}

// selfSigned returns a certificate for 127.0.0.1, made now.
func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "ampbench"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
