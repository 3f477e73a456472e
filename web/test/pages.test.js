import { describe, it, expect } from 'vitest';
import { readableReason, groupFailures, Rate, thumbBox, seedLink, quotaInUnits, parseQuota, requestOrder, levelsText } from '../console/model.js';

const wall = 'job 7 aborted: 3 tile failures reached its budget of 2 (maxFailureCount); last: tiles z2 x 0..3 y 0..1: ' +
  'render on miss failed: GET http://127.0.0.1:4312/wms?SERVICE=REDACTED&VERSION=REDACTED&REQUEST=REDACTED&LAYERS=REDACTED&STYLES=&' +
  'SRS=REDACTED&BBOX=REDACTED&WIDTH=REDACTED&HEIGHT=REDACTED&FORMAT=REDACTED&TRANSPARENT=REDACTED: HTTP 500: map server exploded';

describe('readableReason', () => {
  it('drops a redacted query and keeps what failed and how', () => {
    const r = readableReason(wall);
    expect(r).toBe('job 7 aborted: 3 tile failures reached its budget of 2 (maxFailureCount); last: tiles z2 x 0..3 y 0..1: render on miss failed: GET http://127.0.0.1:4312/wms: HTTP 500: map server exploded');
    expect(r).not.toMatch(/REDACTED/);
  });
  it('keeps a query with values and text without URLs', () => {
    expect(readableReason('GET http://h/wms?a=1&b=2: 404')).toBe('GET http://h/wms?a=1&b=2: 404');
    expect(readableReason('the request can no longer be worked: layer gone')).toBe('the request can no longer be worked: layer gone');
  });
  it('folds redacted pairs outside a URL', () => {
    expect(readableReason('failed with BBOX=REDACTED, WIDTH=REDACTED, HEIGHT=REDACTED here')).toBe('failed with … here');
  });
});

describe('groupFailures', () => {
  it('counts the same failure of several tasks once', () => {
    const fs = [
      { id: 8, job: 7, layer: 'a', reason: wall, at: '2026-01-01T00:00:02Z' },
      { id: 7, job: 7, layer: 'a', reason: wall.replace('3 tile failures', '2 tile failures').replace('x 0..3', 'x 4..7'), at: '2026-01-01T00:00:01Z' },
      { id: 3, job: 3, layer: 'b', reason: 'a tile failed and retries are off (retryCount -1): tiles z0 x 0..0 y 0..0: boom', at: '2026-01-01T00:00:00Z' },
    ];
    const g = groupFailures(fs);
    expect(g.length).toBe(2);
    expect(g[0].count).toBe(2);
    expect(g[0].ids).toEqual([7, 8]);
    expect(g[0].reason.startsWith('3 tile failures reached its budget')).toBe(true);
    expect(g[0].full).toBe(wall);
    expect(g[1].layers).toEqual(['b']);
  });
});

describe('Rate', () => {
  it('measures over its window and restarts on a smaller count', () => {
    const r = new Rate(10000);
    expect(r.perSecond()).toBeNaN();
    r.add(0, 0); r.add(1000, 50); r.add(2000, 100);
    expect(r.perSecond()).toBe(50);
    r.add(20000, 1000);
    expect(r.samples.length).toBe(2);
    r.add(21000, 10);
    expect(r.perSecond()).toBeNaN();
  });
});

describe('thumbBox', () => {
  it('places bounds in the extent, y down, at least a unit', () => {
    expect(thumbBox([-180, -90, 0, 90], [-180, -90, 180, 90], 48, 24)).toEqual({ x: 0, y: 0, width: 24, height: 24 });
    expect(thumbBox([0, 0, 0.001, 0.001], [-180, -90, 180, 90], 48, 24)).toEqual({ x: 24, y: 12, width: 1, height: 1 });
    expect(thumbBox([-500, -500, 500, 500], [-180, -90, 180, 90], 48, 24)).toEqual({ x: 0, y: 0, width: 48, height: 24 });
  });
});

describe('seedLink', () => {
  it('prefills the seed form', () => {
    expect(seedLink({ layer: 'topp:states', gridSet: 'EPSG:4326', format: 'image/png', type: 'RESEED', zoomStart: 0, zoomStop: 5 }))
      .toBe('#seed?layer=topp%3Astates&gridSet=EPSG%3A4326&format=image%2Fpng&type=reseed&zoomStart=0&zoomStop=5');
    expect(seedLink({ layer: 'a', type: 'truncate', bounds: [-10, -5.5, 10, 5.5] })).toBe('#seed?layer=a&type=truncate&bounds=-10%2C-5.5%2C10%2C5.5');
  });
});

describe('quota units', () => {
  it('shows bytes in the largest unit', () => {
    expect(quotaInUnits(1.5 * 1024 ** 3)).toEqual({ value: '1.5', units: 'GiB' });
    expect(quotaInUnits(500)).toEqual({ value: '500', units: 'B' });
    expect(quotaInUnits(10 * 1024 ** 2)).toEqual({ value: '10', units: 'MiB' });
  });
  it('reads a typed quota', () => {
    expect(parseQuota('2,5', 'GiB')).toEqual({ value: '2.5', units: 'GiB', bytes: 2.5 * 1024 ** 3 });
    expect(parseQuota('-5', 'MiB').error).toMatch(/not a positive number/);
    expect(parseQuota('ten', 'MiB').error).toMatch(/"ten"/);
  });
});

describe('requestOrder and levelsText', () => {
  it('puts running before pending before finished, newest first', () => {
    const rs = [{ job: 1, status: 'DONE' }, { job: 5, status: 'PENDING' }, { job: 2, status: 'RUNNING' }, { job: 9, status: 'KILLED' }];
    expect(rs.sort(requestOrder).map((r) => r.job)).toEqual([2, 5, 9, 1]);
    expect(levelsText(3, 3)).toBe('z3');
    expect(levelsText(0, 8)).toBe('z0–8');
    expect(levelsText(undefined, undefined)).toBe('–');
  });
});
