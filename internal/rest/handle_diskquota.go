package rest

import (
	"net/http"

	"tilecache/internal/gwc"
	"tilecache/internal/quota"
)

// getQuota answers GET /rest/diskquota.xml|.json (contract §8.2).
func (h *Handler) getQuota(f format) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		cfg, err := h.svc.Quota.QuotaConfig(r.Context())
		if err != nil {
			return err
		}
		writeQuota(w, f, cfg, false)
		return nil
	}
}

func writeQuota(w http.ResponseWriter, f format, cfg quota.Config, put bool) {
	if f == formatXML {
		writeBody(w, "text/xml; charset=utf-8", gwc.QuotaConfigXML(cfg))
		return
	}
	writeBody(w, "application/json", gwc.QuotaConfigJSON(cfg, put))
}

// putQuota answers PUT /rest/diskquota.xml|.json (contract §8.3): a patch,
// validated as a whole and applied all-or-nothing.
func (h *Handler) putQuota(f format) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		body, err := readBody(w, r)
		if err != nil {
			return err
		}
		var p quota.Patch
		if f == formatXML {
			p, err = gwc.DecodeQuotaPatchXML(body)
		} else {
			p, err = gwc.DecodeQuotaPatchJSON(body)
		}
		if err != nil {
			return err
		}
		cfg, err := h.svc.Quota.UpdateQuotaConfig(r.Context(), func(c quota.Config) (quota.Config, error) { return c.Apply(p) })
		if err != nil {
			return err
		}
		h.log.Info("disk quota configuration changed", "enabled", cfg.Enabled, "global_quota", cfg.GlobalQuota,
			"policy", cfg.GlobalPolicy, "clean_up_every", cfg.CleanUpInterval().String())
		if h.opts.OnQuotaChange != nil {
			h.opts.OnQuotaChange(cfg)
		}
		writeQuota(w, f, cfg, true)
		return nil
	}
}
