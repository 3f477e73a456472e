package rest

import (
	"net/http"

	"tilecache/internal/gwc"
)

// getUsage answers GET /rest/diskquota/usage.xml|.json: used bytes and
// tiles per layer and in total, the quotas and the last clean-up time.
func (q quotaResource) getUsage(f format) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if q.usage == nil {
			writeText(w, http.StatusNotFound, "Disk usage is not counted by this server")
			return nil
		}
		rep, err := q.usage.Report(r.Context())
		if err != nil {
			return err
		}
		if f == formatXML {
			writeBody(w, "text/xml; charset=utf-8", gwc.UsageXML(rep))
		} else {
			writeBody(w, "application/json", gwc.UsageJSON(rep))
		}
		return nil
	}
}
