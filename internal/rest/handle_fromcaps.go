package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/source/upstream"
	"tilecache/internal/wmscaps"
)

// fromCapabilitiesPath is POST's path of the proposal of layers from a
// WMS's capabilities, an extension of this project. Its other methods are
// a layer's .json path as before (refused: XML only).
const fromCapabilitiesPath = "/rest/layers/from-capabilities.json"

// The bounds of the GetCapabilities request a proposal sends.
const (
	capsTimeout  = 20 * time.Second
	capsMaxBytes = 8 << 20
)

type fromCapsRequest struct {
	URL     string   `json:"url"`
	Version string   `json:"version"`
	Layers  []string `json:"layers"`
}

type capsLayerAnswer struct {
	Name  string      `json:"name"`
	Title string      `json:"title"`
	BBox  *[4]float64 `json:"bbox"`
}

type proposedAnswer struct {
	Name   string `json:"name"`
	Title  string `json:"title"`
	Exists bool   `json:"exists"`
	Path   string `json:"path"`
	XML    string `json:"xml"`
}

type fromCapsAnswer struct {
	URL          string            `json:"url"`
	Version      string            `json:"version"`
	Title        string            `json:"title"`
	Capabilities []capsLayerAnswer `json:"capabilities"`
	Proposed     []proposedAnswer  `json:"proposed"`
}

// fromCapabilities answers POST /rest/layers/from-capabilities.json: the
// CLI's `layers from-capabilities` behind the REST interface. It reads the
// WMS's capabilities (through the address policy of upstreams set through
// this interface, with a timeout and a size bound) and answers the
// proposed layers as wmsLayer documents to PUT, with the capabilities'
// layers. Nothing is stored.
func (lr layersResource) fromCapabilities(w http.ResponseWriter, r *http.Request) error {
	if mt := mediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		if mt == "" {
			mt = "none"
		}
		return apperr.New(apperr.Unsupported, "Unsupported Content-Type %s: a proposal is asked for with application/json", apperr.Show(mt))
	}
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	var req fromCapsRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return apperr.Wrap(apperr.Invalid, err, `The body must be {"url": "...", "version": "1.3.0" or "1.1.1", "layers": ["name", ...]}: %v`, err)
	}
	if dec.More() {
		return apperr.Invalidf("The body must be one JSON object")
	}
	if strings.TrimSpace(req.URL) == "" {
		return apperr.Invalidf("url is required: the WMS's address")
	}
	data, base, err := wmscaps.Fetch(r.Context(), capsClient(lr.upstream), req.URL,
		wmscaps.FetchOptions{Version: req.Version, Timeout: capsTimeout, MaxBytes: capsMaxBytes})
	if err != nil {
		return err
	}
	caps, err := wmscaps.Parse(data)
	if err != nil {
		return err
	}
	getMap := caps.GetMapURL
	if getMap == "" {
		getMap = base
	}
	proposals, err := wmscaps.Propose(caps, req.Layers, wmscaps.Options{URL: getMap})
	if err != nil {
		return err
	}
	ans := fromCapsAnswer{URL: base, Version: caps.Version, Title: caps.Title,
		Capabilities: make([]capsLayerAnswer, 0, len(caps.Layers)), Proposed: make([]proposedAnswer, 0, len(proposals))}
	for _, l := range caps.Layers {
		c := capsLayerAnswer{Name: l.Name, Title: l.Title}
		if l.HasBBox {
			b := l.BBox
			c.BBox = &b
		}
		ans.Capabilities = append(ans.Capabilities, c)
	}
	for _, p := range proposals {
		doc, err := wmscaps.LayerDocument(p)
		if err != nil {
			return apperr.Wrap(apperr.Invalid, err, "layer %s proposed from the capabilities: %s", p.Name, apperr.Message(err))
		}
		_, exists := lr.layers.Layer(p.Name)
		ans.Proposed = append(ans.Proposed, proposedAnswer{Name: p.Name, Title: p.Title, Exists: exists,
			Path: lr.basePath + "/rest/layers/" + url.PathEscape(p.Name) + ".xml", XML: string(doc)})
	}
	out, err := json.Marshal(ans)
	if err != nil {
		return apperr.Wrap(apperr.Internal, err, "encode the proposal")
	}
	writeBody(w, "application/json", out)
	return nil
}

// capsClient is the HTTP client of a capabilities request: it connects
// only to addresses policy allows, checked after the name is resolved and
// at every connection (redirects included), directly (no proxy), and
// follows at most five redirects.
func capsClient(policy upstream.AddressPolicy) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second, ControlContext: func(_ context.Context, _, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("refused to connect to %q: not an IP address and port", address)
		}
		return policy.Check(ap.Addr())
	}}
	return &http.Client{
		Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true, TLSHandshakeTimeout: 10 * time.Second, ResponseHeaderTimeout: capsTimeout},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("more than 5 redirects")
			}
			return nil
		},
	}
}
