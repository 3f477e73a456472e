// Command api is the API function: API Gateway HTTP API (payload 2.0)
// events are turned into requests for the same http.Handler that
// `tilecache serve` runs.
package main

import (
	"os"

	"tilecache/internal/app"
	"tilecache/internal/config"
	"tilecache/internal/lambdamain"
)

func main() {
	lambdamain.Run(os.LookupEnv, config.Load, app.New, func(p *app.Program) any { return p.HandleAPI })
}
