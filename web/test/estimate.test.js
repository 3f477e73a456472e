import { describe, it, expect } from 'vitest';
import { backend, estimateRows } from '../console/estimate.js';

const e = {
  tiles: 1000, metatiles: 70, tasks: 2, upstreamRequests: 70, s3Puts: 1000, s3Reads: 10, s3Lists: 3, s3Deletes: 0,
  dynamoDBWrites: 21, sqsMessages: 2, avgTileBytes: 2048, bytes: 2048000, tilesPerSecond: 50, seconds: 20,
  costUSD: { s3: 0.005, dynamodb: 0.00001, sqs: 0.000002, lambda: 0.0007, total: 0.0057 }, pricesAsOf: '2026-11',
};
const labels = (rows) => rows.map(([k]) => k);

describe('estimateRows', () => {
  it('prices the AWS services on the AWS backend', () => {
    const rows = estimateRows(e, 'aws');
    expect(labels(rows)).toContain('S3 PUTs / HEADs / lists / deletes');
    expect(labels(rows)).toContain('DynamoDB writes, SQS messages');
    expect(Object.fromEntries(rows).Cost).toMatch(/^\$0\.0057 \(s3 \$0\.0050, .*prices of 2026-11\)$/);
  });

  it('names no AWS service nor price on the embedded backend', () => {
    const rows = estimateRows(e, 'embedded');
    const text = rows.flat().join(' ');
    for (const w of ['S3', 'DynamoDB', 'SQS', '$']) expect(text).not.toContain(w);
    expect(Object.fromEntries(rows).Cost).toBe('no price per request on the embedded backend (its own disk)');
  });

  it('uses the layer\'s measured size and rate once known, and says when they are not', () => {
    const known = Object.fromEntries(estimateRows(e, 'embedded'));
    expect(known.Bytes).toBe('1.95 MiB (2.00 KiB a tile, the layer\'s average)');
    expect(known.Time).toBe('20 s at 50 tiles/s (the layer\'s measured rate)');
    const unknown = Object.fromEntries(estimateRows({ ...e, bytes: 0, avgTileBytes: 0, seconds: 0, tilesPerSecond: 0 }, 'embedded'));
    expect(unknown.Bytes).toBe('unknown until the layer has tiles');
    expect(unknown.Time).toBe('unknown (no recent seed of the layer)');
  });
});

describe('backend', () => {
  it('reads the page\'s meta element', () => {
    const doc = new DOMParser().parseFromString('<html><head><meta name="tilecache-backend" content="aws"></head></html>', 'text/html');
    expect(backend(doc)).toBe('aws');
    expect(backend(new DOMParser().parseFromString('<html></html>', 'text/html'))).toBe('');
  });
});
