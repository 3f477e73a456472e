package app

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
)

// HandleAPI is the API function's handler: API Gateway HTTP API (payload
// 2.0) events are served by the program's http.Handler through
// httpadapter.NewV2.
func (p *Program) HandleAPI(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	ctx = p.MetricsContext(ctx)
	defer p.FlushMetrics()
	defer p.FlushCDN(ctx)
	p.RefreshLayers(ctx)
	return p.proxy.ProxyWithContext(ctx, ev)
}
