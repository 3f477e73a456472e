// The estimate's rows as the seed page shows them, apart from the page.
import { num, bytes, duration, usd } from './util.js';

// backend is the backend the server runs on (the page's <meta
// name="tilecache-backend">): "aws", "embedded", or "" when not said.
export function backend(doc = document) {
  return doc.querySelector('meta[name="tilecache-backend"]')?.content || '';
}

// estimateRows are the estimate's rows, [label, text]: the requests and
// prices of the AWS services only on that backend (the embedded one has
// no per-request price), the bytes and time from the layer's measured
// tile size and rate once known.
export function estimateRows(e, on) {
  const cost = e.costUSD || {};
  const aws = on === 'aws';
  return [
    ['Tiles', num(e.tiles) + (e.boxTiles ? ` (its bounding box: ${num(e.boxTiles)})` : '')],
    ['Metatiles', num(e.metatiles)], ['Tasks', num(e.tasks)],
    ['Upstream requests', num(e.upstreamRequests)],
    ...(aws ? [
      ['S3 PUTs / HEADs / lists / deletes', [e.s3Puts, e.s3Reads, e.s3Lists, e.s3Deletes].map(num).join(' / ')],
      ['DynamoDB writes, SQS messages', num(e.dynamoDBWrites) + ', ' + num(e.sqsMessages)],
    ] : []),
    ['Bytes', e.bytes ? bytes(e.bytes) + ` (${bytes(e.avgTileBytes)} a tile, the layer's average)` : 'unknown until the layer has tiles'],
    ['Time', e.seconds ? duration(e.seconds) + ` at ${num(Math.round(e.tilesPerSecond))} tiles/s (the layer's measured rate)` : 'unknown (no recent seed of the layer)'],
    aws ? ['Cost', usd(cost.total) + ' (' + Object.entries(cost).filter(([k]) => k !== 'total').map(([k, v]) => `${k} ${usd(v)}`).join(', ') + (e.pricesAsOf ? `; prices of ${e.pricesAsOf}` : '') + ')']
      : ['Cost', `no price per request on the ${on || 'this'} backend (its own disk)`],
  ];
}
