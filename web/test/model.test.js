import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { restServer, atConsole } from './server.js';

const xml = (body) => ({ type: 'application/xml', body });
const world = `<gridSet><name>world</name><srs><number>4326</number></srs>
  <extent><coords><double>-180.0</double><double>-90.0</double><double>180.0</double><double>90.0</double></coords></extent>
  <alignTopLeft>true</alignTopLeft><resolutions><double>0.703125</double><double>0.3515625</double></resolutions>
  <metersPerUnit>111319.49079327358</metersPerUnit><tileHeight>256</tileHeight><tileWidth>512</tileWidth></gridSet>`;
const scales = `<gridSet><name>scales</name><srs><number>2154</number></srs>
  <extent><coords><double>0</double><double>0</double><double>1000</double><double>1000</double></coords></extent>
  <scaleDenominators><double>10000</double><double>5000</double></scaleDenominators><pixelSize>0.00025</pixelSize></gridSet>`;

let srv;
let model;
const served = { overview: true, flaky: false };
beforeAll(async () => {
  srv = await restServer({
    'GET overview.json': () => (served.overview ? { body: { layers: [{ name: 'from-overview' }], gridSets: [] } } : { status: 404, body: 'not here\n' }),
    'GET layers': () => xml('<layers><layer><name>a</name></layer><layer><name>b</name></layer></layers>'),
    'GET gridsets': () => xml('<gridSets><gridSet><name>world</name></gridSet></gridSets>'),
    'GET diskquota/usage.json': () => ({ body: { diskQuotaUsage: {
      enabled: true, globalExpirationPolicyName: 'LFU', globalQuota: { value: '1.5', units: 'GiB' }, usedBytes: 300, usedTiles: 3,
      layers: [{ layer: 'a', usedBytes: 300, usedTiles: 3, recountPending: true, quota: { value: '2', units: 'MiB' }, expirationPolicyName: 'LRU' }],
    } } }),
    'GET layers/a.xml': () => xml(`<wmsLayer><name>a</name><title> Layer A </title>
      <mimeFormats><string>image/png</string><string>image/jpeg</string></mimeFormats>
      <gridSubsets><gridSubset><gridSetName>world</gridSetName></gridSubset><gridSubset><gridSetName>EPSG:900913</gridSetName></gridSubset></gridSubsets></wmsLayer>`),
    'GET layers/b.xml': () => ({ status: 409, body: 'b is being changed\n' }),
    'GET gridsets/world.xml': () => xml(world),
    'GET gridsets/scales.xml': () => xml(scales),
    'GET gridsets/flaky.xml': () => (served.flaky ? xml(world.replace('<name>world</name>', '<name>flaky</name>')) : { status: 503, body: 'busy\n' }),
  });
  atConsole(srv);
  model = await import('../console/model.js');
});
afterAll(() => srv.close());

const asked = (path) => srv.requests.filter((r) => r.path === path).length;

describe('quotaBytes', () => {
  it('turns a quota of value and units into bytes', () => {
    expect(model.quotaBytes({ value: '1.5', units: 'GiB' })).toBe(1.5 * 1024 ** 3);
    expect(model.quotaBytes({ value: 100, units: 'B' })).toBe(100);
    expect(model.quotaBytes({ value: '0.5', units: 'KiB' })).toBe(512);
    expect(model.quotaBytes({ value: '3', units: 'furlongs' })).toBe(3);
    expect(model.quotaBytes(null)).toBeNull();
  });
});

describe('gridSet', () => {
  it('reads a grid set document', async () => {
    const g = await model.gridSet('world');
    expect(g).toMatchObject({
      name: 'world', epsg: 4326, extent: [-180, -90, 180, 90], resolutions: [0.703125, 0.3515625],
      tileWidth: 512, tileHeight: 256, topLeft: true, metersPerUnit: 111319.49079327358, pixelSize: 0.00028,
    });
    expect(g.xml).toBe(world);
  });

  it('makes resolutions of the scale denominators, with defaults for what is not said', async () => {
    const g = await model.gridSet('scales');
    expect(g).toMatchObject({ epsg: 2154, tileWidth: 256, tileHeight: 256, topLeft: false, metersPerUnit: 1, pixelSize: 0.00025 });
    expect(g.resolutions).toEqual([10000 * 0.00025, 5000 * 0.00025]);
  });

  it('asks for a grid set once, even twice at a time', async () => {
    const before = asked('gridsets/world.xml');
    const [a, b] = await Promise.all([model.gridSet('world'), model.gridSet('world')]);
    expect(a).toBe(b);
    expect(asked('gridsets/world.xml')).toBe(before);
  });

  it('asks again after a failure', async () => {
    await expect(model.gridSet('flaky')).rejects.toThrow('busy');
    served.flaky = true;
    expect((await model.gridSet('flaky')).name).toBe('flaky');
    expect(asked('gridsets/flaky.xml')).toBe(2);
  });
});

describe('loadOverview', () => {
  it('takes overview.json when the server has it', async () => {
    served.overview = true;
    expect(await model.loadOverview()).toEqual({ layers: [{ name: 'from-overview' }], gridSets: [] });
  });

  it('composes the overview of the layers, their documents and the usage report otherwise, and stops asking for overview.json', async () => {
    served.overview = false;
    const o = await model.loadOverview();
    expect(o.partial).toBe(true);
    expect(o.gridSets).toEqual([{ name: 'world', managedBy: '' }]);
    expect(o.layers).toEqual([
      { name: 'a', title: 'Layer A', managedBy: '', gridSets: ['world', 'EPSG:900913'], formats: ['image/png', 'image/jpeg'],
        usage: { bytes: 300, tiles: 3, recountPending: true }, quota: { bytes: 2 * 1024 ** 2, policy: 'LRU' }, tasks: null, lastFinished: null },
      { name: 'b', title: '', managedBy: '', gridSets: [], formats: [], usage: null, quota: null, tasks: null, lastFinished: null },
    ]);
    expect(o.quota).toEqual({ enabled: true, policy: 'LFU', globalQuotaBytes: 1.5 * 1024 ** 3, usedBytes: 300, usedTiles: 3,
      counted: true, lastCleanUp: null, recountPending: [] });
    const overviews = asked('overview.json');
    served.overview = true;
    expect((await model.loadOverview()).partial).toBe(true);
    expect(asked('overview.json')).toBe(overviews);
  });
});
