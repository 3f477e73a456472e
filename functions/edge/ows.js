// tilecache edge function (cloudfront-js-2.0, viewer request) of /gwc/service/*
// and /wmts: WMTS KVP and WMS-C to stored keys or OGC exceptions, the twin of
// internal/edgepath's OWS (documented there; both pass testdata/ows-cases.json).
// Indented by 2 for the 10 KB limit.
import cf from 'cloudfront';

var kvs = cf.kvs();
var NUM = /^(0|[1-9][0-9]{0,14})$/;
var DEC = /^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/;
var WMS_PARAMS = /^(service|version|request|layers|styles|srs|crs|bbox|width|height|format|transparent|tiled|exceptions|bgcolor)$/;

function has(o, k) {
  return Object.prototype.hasOwnProperty.call(o, k);
}

async function get(key) {
  try {
    return await kvs.get(key);
  } catch (e) {
    return null;
  }
}

async function json(key) {
  var v = await get(key);
  try {
    return v === null ? null : JSON.parse(v);
  } catch (e) {
    return null;
  }
}

function levels(v) {
  var p = String(v).split(';');
  var c = p[0].split(',');
  var r = (p[1] || '').split(',');
  var ok = v !== null && p.length > 1 && p.length < 4 && p[2] !== '' && c.length === r.length &&
    c.concat(r).every(function (n) { return /^[1-9][0-9]{0,15}$/.test(n); });
  return ok ? { cols: c.map(Number), rows: r.map(Number), gridSet: p[2] } : null;
}

function dec(s) {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch (e) {
    return s;
  }
}

function esc(s) {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function enc(s) {
  return encodeURIComponent(s).replace(/%3A/g, ':');
}

function answer(status, type, body) {
  var h = { 'content-type': { value: type }, 'cache-control': { value: 'no-store' }, 'access-control-allow-origin': { value: '*' } };
  return { statusCode: status, headers: h, body: { encoding: 'text', data: body } };
}

var XML = '<?xml version="1.0" encoding="UTF-8"?>\n';

function owsEx(status, code, locator, text) {
  return answer(status, 'application/xml', XML + '<ExceptionReport xmlns="http://www.opengis.net/ows/1.1" version="1.1.0" xml:lang="en">' +
    '<Exception exceptionCode="' + code + '"' + (locator ? ' locator="' + esc(locator) + '"' : '') + '><ExceptionText>' +
    esc(text) + '</ExceptionText></Exception></ExceptionReport>\n');
}

function wmsEx(code, text) {
  return answer(400, 'application/vnd.ogc.se_xml', XML + '<ServiceExceptionReport version="1.1.1"><ServiceException' +
    (code ? ' code="' + code + '"' : '') + '>' + esc(text) + '</ServiceException></ServiceExceptionReport>\n');
}

async function layer(id) {
  var priv = await get('/private/' + id);
  var l = await json('/layer/' + id);
  return priv !== null ? 'private' : l && l.g && l.f ? l : null;
}

function format(l, mime) {
  return has(l.f, mime) ? l.f[mime] : null;
}

var PRIVATE = ' is private: use the RESTful paths with a tile token';

var N = ['Service', 'Request', 'Version', 'Layer', 'Style', 'Format', 'TileMatrixSet', 'TileMatrix', 'TileRow', 'TileCol'];

// missing: the exception of the first of N[from:to] missing from p, or null
// (no closures in async functions: njs loses their variables).
function missing(p, from, to) {
  for (var i = from; i < to; i++) {
    var v = p[N[i].toLowerCase()];
    if (v === undefined || (v === '' && i !== 4)) {
      return owsEx(400, 'MissingParameterValue', N[i], 'The parameter ' + N[i] + ' is missing');
    }
  }
  return null;
}

function invalid(name, value) {
  return owsEx(400, 'InvalidParameterValue', name, 'The value ' + value + ' of ' + name + ' is not valid');
}

async function wmts(p) {
  var i, v;
  var res = missing(p, 0, 2);
  if (res === null && p.service !== 'WMTS') {
    res = invalid('Service', p.service);
  }
  if (res === null && p.acceptversions && p.acceptversions.split(',').indexOf('1.0.0') < 0) {
    res = owsEx(400, 'VersionNegotiationFailed', 'AcceptVersions', 'Only 1.0.0 is offered');
  }
  if (res !== null || p.request === 'GetCapabilities') {
    return res || '/WMTSCapabilities.xml';
  }
  if (p.request !== 'GetTile') {
    return invalid('Request', p.request);
  }
  res = missing(p, 2, 10);
  if (res !== null || p.version !== '1.0.0') {
    return res || invalid('Version', p.version);
  }
  var id = p.layer;
  var l = await layer(id);
  if (l === 'private') {
    return owsEx(403, 'NoApplicableCode', 'Layer', 'The layer ' + id + PRIVATE);
  }
  var style = p.style || 'default';
  var f = l && format(l, p.format);
  var gs = p.tilematrixset;
  var g = await get(gs);
  g = levels(g);
  if (g !== null && g.gridSet) {
    gs = g.gridSet;
  }
  var z = NUM.test(p.tilematrix) ? Number(p.tilematrix) : -1;
  if (l === null) {
    return invalid('Layer', id);
  }
  if (style === '.' || style === '..' || /[/%]/.test(style)) {
    return invalid('Style', style);
  }
  if (f === null) {
    return invalid('Format', p.format);
  }
  if (g === null || l.g.indexOf(gs) < 0) {
    return invalid('TileMatrixSet', p.tilematrixset);
  }
  if (z < 0 || z >= g.rows.length) {
    return invalid('TileMatrix', p.tilematrix);
  }
  var limits = [g.rows[z], g.cols[z]];
  for (i = 8; i < 10; i++) {
    v = p[N[i].toLowerCase()];
    if (!NUM.test(v)) {
      return invalid(N[i], v);
    }
    if (Number(v) >= limits[i - 8]) {
      return owsEx(400, 'TileOutOfRange', N[i], 'The ' + N[i] + ' ' + v + " is out of the tile matrix's range 0 to " + (limits[i - 8] - 1));
    }
  }
  return '/' + enc(id) + '/' + enc(gs) + '/' + f[0] + '/' + enc(style) + '/' + p.tilematrix + '/' + p.tilecol + '/' +
    (g.rows[z] - 1 - Number(p.tilerow)) + '%2E' + f[1];
}

function tileOf(g, lv, b, w, h) {
  if (w !== g.w || h !== g.h || lv.rows.length !== g.r.length) {
    return null;
  }
  var res = (b[2] - b[0]) / w;
  var z = -1, best = Infinity, i, e;
  for (i = 0; i < g.r.length; i++) {
    e = Math.abs(res - g.r[i]);
    if (e < best) {
      z = i;
      best = e;
    }
  }
  if (z < 0) {
    return null; // res is not a number: an infinite box
  }
  var r = g.r[z];
  if (best > 0.1 * res || Math.abs((b[3] - b[1]) / h - r) > 0.1 * r) {
    return null;
  }
  var fx = (b[0] - g.x) / (r * g.w);
  var fy = g.tl ? (g.y - b[3]) / (r * g.h) : (b[1] - g.y) / (r * g.h);
  var x = Math.round(fx), y = Math.round(fy);
  if (Math.abs(fx - x) > 0.1 || Math.abs(fy - y) > 0.1 || x < 0 || y < 0 || x >= lv.cols[z] || y >= lv.rows[z]) {
    return null;
  }
  return '/' + z + '/' + x + '/' + (g.tl ? lv.rows[z] - 1 - y : y);
}

async function wms(p) {
  var k, i;
  if (has(p, 'service') && p.service !== 'WMS') {
    return wmsEx('', 'The service ' + p.service + ' is not WMS');
  }
  if (p.request === 'GetCapabilities') {
    return '/WMSCapabilities.xml';
  }
  if (!p.request) {
    return wmsEx('', 'The parameter REQUEST is missing');
  }
  if (p.request !== 'GetMap') {
    return wmsEx('OperationNotSupported', 'The operation ' + p.request + ' is not supported');
  }
  k = Object.keys(p).sort().filter(function (n) { return !WMS_PARAMS.test(n); })[0];
  if (k) {
    return wmsEx('', 'The parameter ' + k.toUpperCase() + ' is not one of a stored tile');
  }
  var id = p.layers || '';
  var l = await layer(id);
  if (l === 'private') {
    return wmsEx('LayerNotDefined', 'The layer ' + id + PRIVATE);
  }
  if (l === null) {
    return wmsEx('LayerNotDefined', 'The layer ' + id + ' is not one of this service');
  }
  if (p.styles && p.styles !== 'default') {
    return wmsEx('StyleNotDefined', 'The style ' + p.styles + ' is not cached: only the default style is');
  }
  var f = format(l, p.format);
  if (f === null) {
    return wmsEx('InvalidFormat', 'The format ' + (p.format || '') + ' is not one of layer ' + id);
  }
  var srs = has(p, 'srs') ? p.srs : (p.crs || '');
  var epsg = srs === 'CRS:84' ? 4326 : (/^EPSG:/.test(srs) && /^(0|[1-9][0-9]{0,14})$/.test(srs.slice(5)) ? Number(srs.slice(5)) : -1);
  if (epsg < 0) {
    return wmsEx('InvalidSRS', 'The SRS ' + srs + ' is not one of layer ' + id);
  }
  var b = (p.bbox || '').split(',');
  var ok = NUM.test(p.width) && NUM.test(p.height) && b.length === 4 && b.every(function (s) { return DEC.test(s); });
  b = b.map(Number);
  if (!ok || b[0] >= b[2] || b[1] >= b[3]) {
    return wmsEx('', 'WIDTH, HEIGHT and BBOX (minx,miny,maxx,maxy) are needed');
  }
  if (p.version === '1.3.0' && epsg === 4326 && srs !== 'CRS:84') {
    b = [b[1], b[0], b[3], b[2]];
  }
  var known = false, g, lv, t;
  for (i = 0; i < l.g.length; i++) {
    g = await json('/wmsc/' + l.g[i]);
    lv = await get(l.g[i]);
    lv = levels(lv);
    if (g === null || lv === null || g.epsg.indexOf(epsg) < 0) {
      continue;
    }
    known = true;
    t = tileOf(g, lv, b, Number(p.width), Number(p.height));
    if (t !== null) {
      return '/' + enc(id) + '/' + enc(l.g[i]) + '/' + f[0] + '/default' + t + '.' + f[1];
    }
  }
  if (!known) {
    return wmsEx('InvalidSRS', 'The SRS ' + srs + ' is not one of layer ' + id);
  }
  return wmsEx('', 'BBOX, WIDTH and HEIGHT are no tile of layer ' + id + ': only stored tiles are served');
}

async function handler(event) {
  var request = event.request;
  var q = request.querystring;
  var p = Object.create(null), dups = [], keys = Object.keys(q), i, name, res;
  for (i = 0; i < keys.length; i++) {
    name = dec(keys[i]).toLowerCase();
    if (has(p, name) || q[keys[i]].multiValue) {
      dups.push(name);
    }
    p[name] = dec(q[keys[i]].value);
  }
  // A name given twice is refused.
  var dup = dups.sort()[0];
  // GetFeatureInfo: to the origin (edgepath.FeatureInfoPrefix).
  var u = request.uri, gfi = p.request === 'GetFeatureInfo' &&
    '/_tilecache/ows' + u + '/' + enc(keys.sort().map(function (k) { return k + '=' + q[k].value; }).join('&'));
  if (u === '/gwc/service/wmts' || u === '/wmts') {
    res = dup ? owsEx(400, 'InvalidParameterValue', dup, 'The parameter ' + dup + ' is given twice') : gfi || await wmts(p);
  } else if (u === '/gwc/service/wms') {
    res = dup ? wmsEx('', 'The parameter ' + dup.toUpperCase() + ' is given twice') : gfi || await wms(p);
  } else {
    return answer(404, 'text/plain; charset=utf-8', 'Not found: no such service\n');
  }
  if (typeof res !== 'string') {
    return res;
  }
  request.uri = res;
  request.querystring = {};
  return request;
}
