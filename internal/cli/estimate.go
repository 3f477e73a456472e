package cli

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"tilecache/internal/gwc"
)

// rateUnknown says why the time and the Lambda cost of an estimate are
// unknown: the server measures a layer's render rate while it seeds the
// layer, and keeps it for an hour.
const rateUnknown = "unknown until a seed on this server measures the layer's render rate"

// writeEstimate prints est, the estimate of a request of type typ (seed,
// reseed or truncate) of layer. Whatever the server left unknown (the
// layer's render rate, its stored tiles' sizes, the prices) is said to be
// unknown, never printed as a number.
func writeEstimate(out io.Writer, layer, typ string, est gwc.Estimate) {
	if est.Type != "" {
		typ = est.Type
	}
	typ = strings.ToUpper(typ)
	tasks := "tasks"
	if est.Tasks == 1 {
		tasks = "task"
	}
	head := typ + " " + layer
	if est.GridSetID != "" {
		head += ", grid set " + est.GridSetID
	}
	if est.Format != "" {
		head += ", " + est.Format
	}
	fmt.Fprintf(out, "%s: %d %s\n", head, est.Tasks, tasks)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "zoom\ttiles\tmetatiles\t")
	for _, l := range est.Levels {
		fmt.Fprintf(w, "%d\t%d\t%d\t\n", l.Zoom, l.Tiles, l.Metatiles)
	}
	fmt.Fprintf(w, "total\t%d\t%d\t\n", est.Tiles, est.Metatiles)
	w.Flush()
	fmt.Fprintf(out, "upstream requests %d, S3 PUTs %d, S3 reads %d, S3 listings %d, S3 deletes %d, DynamoDB writes %d, SQS messages %d\n",
		est.UpstreamRequests, est.S3Puts, est.S3Reads, est.S3Lists, est.S3Deletes, est.DynamoDBWrites, est.SQSMessages)
	if typ != "TRUNCATE" { // a truncate stores nothing
		switch {
		case est.Bytes > 0 && est.AvgTileBytes > 0:
			fmt.Fprintf(out, "bytes about %s (%d bytes per tile on average)\n", humanBytes(float64(est.Bytes)), est.AvgTileBytes)
		case est.Bytes > 0:
			fmt.Fprintf(out, "bytes about %s\n", humanBytes(float64(est.Bytes)))
		default:
			fmt.Fprintln(out, "bytes: unknown until the layer has tiles stored (the estimate takes their average size)")
		}
	}
	if known(est.TilesPerSecond) {
		fmt.Fprintf(out, "time %s at %s tiles/s\n", duration(est.Seconds), tileRate(est.TilesPerSecond))
	} else {
		fmt.Fprintln(out, "time: "+rateUnknown)
	}
	if est.CostUSD != nil { // else the server prices nothing
		writeCost(out, est)
	}
	for _, n := range est.Notes {
		fmt.Fprintf(out, "note: %s\n", n)
	}
}

// writeCost prints the AWS cost line of est, and a line of its own for a
// Lambda cost the server could not tell.
func writeCost(out io.Writer, est gwc.Estimate) {
	var parts []string
	var sum float64
	for _, s := range []struct{ key, name string }{{"s3", "S3"}, {"dynamodb", "DynamoDB"}, {"sqs", "SQS"}, {"lambda", "Lambda"}} {
		if v, ok := est.CostUSD[s.key]; ok {
			parts = append(parts, s.name+" "+dollars(v))
			sum += v
		}
	}
	total, ok := est.CostUSD["total"]
	if !ok {
		total = sum
	}
	line := "AWS cost " + aboutDollars(total)
	if est.PricesAsOf != "" {
		line += " at list prices of " + est.PricesAsOf
	} else {
		line += " at list prices"
	}
	_, lambda := est.CostUSD["lambda"]
	if !lambda {
		line += " without Lambda"
	}
	if len(parts) > 0 {
		line += " (" + strings.Join(parts, ", ") + ")"
	}
	fmt.Fprintln(out, line)
	if !lambda {
		fmt.Fprintln(out, "Lambda cost: "+rateUnknown)
	}
}

// known reports whether v is a measured quantity: positive and finite.
func known(v float64) bool { return v > 0 && !math.IsInf(v, 0) }

// dollars formats an amount in US dollars: cents, thousands grouped, and
// "under $0.01" for what rounds to no cent.
func dollars(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "unknown"
	case v <= 0:
		return "$0.00"
	case v < 0.005:
		return "under $0.01"
	case v >= 1e12:
		return "over $1,000,000,000,000"
	}
	cents := int64(math.Round(v * 100))
	return fmt.Sprintf("$%s.%02d", groupThousands(cents/100), cents%100)
}

// aboutDollars is dollars(v) as an estimate: "about $1.76".
func aboutDollars(v float64) string {
	d := dollars(v)
	if strings.HasPrefix(d, "$") && d != "$0.00" {
		return "about " + d
	}
	return d
}

// duration formats an estimated time: "under a second", "49s", "4m49s",
// "3h38m", then days and years (beyond what a time.Duration holds).
func duration(secs float64) string {
	switch {
	case math.IsNaN(secs):
		return "unknown"
	case secs < 1:
		return "under a second"
	case secs < 60:
		return fmt.Sprintf("about %.0fs", secs)
	case secs < 3600:
		s := int64(math.Round(secs))
		return fmt.Sprintf("about %dm%02ds", s/60, s%60)
	case secs < 48*3600:
		m := int64(math.Round(secs / 60))
		return fmt.Sprintf("about %dh%02dm", m/60, m%60)
	case secs < 365*86400:
		return fmt.Sprintf("about %.1f days", secs/86400)
	case math.IsInf(secs, 0) || secs >= 1e12*365*86400:
		return "over a trillion years"
	}
	return fmt.Sprintf("about %s years", groupThousands(int64(math.Round(secs/(365.25*86400)))))
}

// groupThousands writes n with its thousands grouped: 1,234,567.
func groupThousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// tileRate formats tiles per second: whole numbers from 10 up, else one
// or two significant digits.
func tileRate(v float64) string {
	switch {
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 0.1:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'g', 2, 64)
}

func humanBytes(b float64) string {
	units := []string{"B", "KB", "MB", "GB", "TB", "PB", "EB"}
	i := 0
	for b >= 1000 && i < len(units)-1 {
		b /= 1000
		i++
	}
	return fmt.Sprintf("%.1f %s", b, units[i])
}
