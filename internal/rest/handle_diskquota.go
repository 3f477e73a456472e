package rest

import (
	"log/slog"
	"net/http"

	"tilecache/internal/gwc"
	"tilecache/internal/quota"
)

// quotaResource serves the disk quota: its configuration
// (/rest/diskquota), its usage, the reads counted from access logs and
// the usage pages of a level.
type quotaResource struct {
	config   quota.ConfigStore
	onChange func(quota.Config) // called with every configuration stored (nil: none)
	usage    UsageReporter      // nil: 404
	reads    ReadRecorder       // nil: 404
	pagesOf  PageReader         // nil: 404
	layers   Layers
	log      *slog.Logger
}

// getQuota answers GET /rest/diskquota.xml|.json (contract §8.2).
func (q quotaResource) getConfig(f format) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		cfg, err := q.config.QuotaConfig(r.Context())
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
func (q quotaResource) putConfig(f format) handlerFunc {
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
		cfg, err := q.config.UpdateQuotaConfig(r.Context(), func(c quota.Config) (quota.Config, error) { return c.Apply(p) })
		if err != nil {
			return err
		}
		q.log.Info("disk quota configuration changed", "enabled", cfg.Enabled, "global_quota", cfg.GlobalQuota,
			"policy", cfg.GlobalPolicy, "clean_up_every", cfg.CleanUpInterval().String())
		if q.onChange != nil {
			q.onChange(cfg)
		}
		writeQuota(w, f, cfg, true)
		return nil
	}
}
