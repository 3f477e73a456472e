// The demo map page: lists the tile sets of index.json (written beside the
// tiles) and shows one on an OpenLayers map, bundled into the page by
// web/build.mjs. Every grid is described to OpenLayers by the index alone:
// resolutions per level and the bottom-left origin of tile (0, 0); tile
// rows are counted from the bottom, as in the keys (OpenLayers counts them
// down from the origin: its row r is the key's row -r - 1).
// URL hash: #set=N&z=Z&lat=..&lon=..&source=S selects a tile set, a
// level, a centre and how tiles are asked for: S is tms (the stored keys,
// the default), xyz (the CDN's /xyz/ paths, rows counted from the top) or
// wmts (the ResourceURL of the layer's WMTS capabilities, rows from the
// top) or pmtiles (the tile set's PMTiles archive, when index.json lists
// one, read with range requests by the pmtiles library; rows from the
// top). <body data-ready="N"> is set once tile set N's tiles loaded.
// A vector tile set (Mapbox Vector Tiles) is drawn from its TileJSON (tms:
// tilejson.json, rows from the bottom; xyz: tilejson-xyz.json; wmts: the
// capabilities' ResourceURL) on tiles 512 pixels wide (level z of the
// tile set is zoom z), with a style made from TileJSON's vector_layers:
// each source layer in a colour of its own, its polygons filled, its lines
// stroked and its points as circles. <body data-renderer> says which kind
// of layer draws the tile set shown (raster or vector), and
// window.demoTiles() lists the raster tiles drawn: their URLs and where
// they are in the viewport.
import Map from 'ol/Map.js';
import View from 'ol/View.js';
import TileLayer from 'ol/layer/Tile.js';
import VectorTileLayer from 'ol/layer/VectorTile.js';
import TileImage from 'ol/source/TileImage.js';
import VectorTileSource from 'ol/source/VectorTile.js';
import MVT from 'ol/format/MVT.js';
import TileGrid from 'ol/tilegrid/TileGrid.js';
import { createXYZ } from 'ol/tilegrid.js';
import Projection from 'ol/proj/Projection.js';
import { get as getProjection, fromLonLat, toLonLat, transformExtent } from 'ol/proj.js';
import { getCenter } from 'ol/extent.js';
import { Style, Fill, Stroke, Circle } from 'ol/style.js';
import TileState from 'ol/TileState.js';
import { PMTiles } from 'pmtiles';

const select = document.getElementById('tileset');
const sourceSelect = document.getElementById('source');
const info = document.getElementById('info');
const cursor = document.getElementById('cursor');
const base = location.href.replace(/[#?].*$/, '').replace(/[^/]*$/, '');
const mvt = 'application/vnd.mapbox-vector-tile';
// palette: one colour per source layer of a vector tile set.
const palette = ['#d7263d', '#1b998b', '#2e5eaa', '#f49d37', '#7b2d8b', '#3f88c5', '#8a6f30', '#e84393'];
const background = '#f4f1ea';
let map = null;
let sets = [];
let shownAt = 0;
let drawn = () => [];

function hash() {
  const out = {};
  location.hash.replace(/^#/, '').split('&').forEach((kv) => {
    const i = kv.indexOf('=');
    if (i > 0) out[decodeURIComponent(kv.slice(0, i))] = decodeURIComponent(kv.slice(i + 1));
  });
  return out;
}

const rel = (path) => base + path.replace(/^\.\//, '');
const isMercator = (srs) => srs === 'EPSG:3857' || srs === 'EPSG:900913';
const isLonLat = (srs) => isMercator(srs) || srs === 'EPSG:4326';

// projectionOf: OpenLayers' own for Web Mercator and EPSG:4326; any other
// CRS is a projection of its own over the grid's extent, its coordinates
// the grid's (the hash's lat and lon are then y and x in them).
function projectionOf(ts) {
  if (isMercator(ts.srs)) return getProjection('EPSG:3857');
  if (ts.srs === 'EPSG:4326') return getProjection('EPSG:4326');
  return new Projection({ code: ts.srs, extent: ts.extent });
}

// toMap and fromMap convert between the hash's lon/lat and the map's
// coordinates.
function toMap(ts, lonLat) {
  return isLonLat(ts.srs) ? fromLonLat(lonLat, projectionOf(ts)) : lonLat;
}

// shownExtent is what a tile set's view fits at first: its bounds (lon/lat)
// when the index gives them, else the grid's extent.
function shownExtent(ts, proj) {
  if (ts.bounds && isLonLat(ts.srs)) return transformExtent(ts.bounds, 'EPSG:4326', proj);
  return ts.bounds || ts.extent;
}

// segment escapes a path segment as the documents do (':' kept).
const segment = (s) => encodeURIComponent(s).replace(/%3A/gi, ':');

// wmtsTemplate reads the layer's WMTS capabilities and returns its
// ResourceURL for the tile set's format, with the tile matrix set and
// style filled in and {z}/{x}/{y} for the tile.
async function wmtsTemplate(ts) {
  const r = await fetch(rel(ts.wmts), { cache: 'no-cache' });
  if (!r.ok) throw new Error(ts.wmts + ': HTTP ' + r.status);
  const doc = new DOMParser().parseFromString(await r.text(), 'application/xml');
  const OWS = 'http://www.opengis.net/ows/1.1';
  const WMTS = 'http://www.opengis.net/wmts/1.0';
  for (const layer of doc.getElementsByTagNameNS(WMTS, 'Layer')) {
    const id = layer.getElementsByTagNameNS(OWS, 'Identifier')[0];
    if (!id || id.textContent !== ts.layerId) continue;
    for (const u of layer.getElementsByTagNameNS(WMTS, 'ResourceURL')) {
      if (u.getAttribute('format') === ts.format && u.getAttribute('resourceType') === 'tile') {
        return u.getAttribute('template')
          .replace('{TileMatrixSet}', segment(ts.gridSet)).replace('{Style}', segment(ts.parametersId))
          .replace('{TileMatrix}', '{z}').replace('{TileCol}', '{x}').replace('{TileRow}', '{y}');
      }
    }
  }
  throw new Error(ts.wmts + ' has no ' + ts.format + ' tiles of layer ' + ts.layerId);
}

// tileURL returns the tile URL template of a source.
async function tileURL(ts, source) {
  if (source === 'pmtiles') return 'pmtiles:{z}/{x}/{y}';
  if (source === 'xyz') return rel(ts.xyz);
  if (source === 'wmts') return wmtsTemplate(ts);
  return rel(ts.tiles);
}

function label(ts) {
  const p = Object.keys(ts.parameters || {}).map((k) => k + '=' + ts.parameters[k]).join('&');
  return (ts.title || ts.layer) + ' · ' + ts.gridSet + ' · ' + ts.format + (p ? ' · ' + p : '');
}

// overlaps: extents a and b share more than an edge.
const overlaps = (a, b) => a[0] < b[2] && a[2] > b[0] && a[1] < b[3] && a[3] > b[1];
const fill = (template, z, x, y) => template.replace('{z}', z).replace('{x}', x).replace('{y}', y);
const plain = (s) => (s ? s.replace(/[<>&]/g, '') : '');

// archiveTile reads tile "pmtiles:z/x/y" (rows from the top) of archive p:
// its bytes, or null where the archive has none.
async function archiveTile(p, src) {
  const m = /^pmtiles:(\d+)\/(\d+)\/(\d+)$/.exec(src);
  if (!m) return null;
  const r = await p.getZxy(+m[1], +m[2], +m[3]);
  return r ? r.data : null;
}

// archiveImage is a TileImage tileLoadFunction drawing the tiles of
// archive p (type: the tiles' media type).
function archiveImage(p, type) {
  return (tile, src) => {
    archiveTile(p, src).then((data) => {
      if (!data) { tile.setState(TileState.EMPTY); return; }
      const u = URL.createObjectURL(new Blob([data], { type }));
      const img = tile.getImage();
      img.addEventListener('load', () => URL.revokeObjectURL(u), { once: true });
      img.src = u;
    }).catch(() => tile.setState(TileState.ERROR));
  };
}

// archiveTileJSON is what showVector needs of a TileJSON, from a PMTiles
// archive's header and metadata.
async function archiveTileJSON(p) {
  const h = await p.getHeader();
  const md = await p.getMetadata();
  return {
    tiles: ['pmtiles:{z}/{x}/{y}'], minzoom: h.minZoom, maxzoom: h.maxZoom,
    bounds: [h.minLon, h.minLat, h.maxLon, h.maxLat], center: [h.centerLon, h.centerLat, h.centerZoom],
    vector_layers: md.vector_layers || [], attribution: md.attribution,
  };
}

// freshMap removes the map shown and makes a new one in an untouched #map
// element.
function freshMap(view, layer) {
  if (map) { map.setTarget(null); map = null; }
  drawn = () => [];
  const old = document.getElementById('map');
  const el = old.cloneNode(false);
  el.className = '';
  old.parentNode.replaceChild(el, old);
  map = new Map({ target: el, view, layers: layer ? [layer] : [] });
  return map;
}

// ready sets data-ready once the map shown has drawn every tile it asked
// for (a tile not stored yet counts as drawn).
function ready(m, i) {
  m.on('rendercomplete', () => { if (map === m) document.body.setAttribute('data-ready', String(i)); });
}

// snap moves the view's centre by less than a pixel so that tile edges
// fall on whole pixels: tiles are drawn as stored, unresampled.
function snap(m, origin) {
  const view = m.getView();
  const size = m.getSize();
  const c = view.getCenter();
  const r = view.getResolution();
  if (!size || !c || !r) return;
  const dx = ((c[0] - (size[0] / 2) * r - origin[0]) / r) % 1;
  const dy = ((origin[1] - c[1] - (size[1] / 2) * r) / r) % 1;
  view.setCenter([c[0] - dx * r, c[1] + dy * r]);
}

// vectorStyle is a style function of a TileJSON's vector_layers: per
// source layer one colour, a fill of its polygons, a line of its lines
// and a circle per point.
function vectorStyle(tj) {
  const styles = {};
  (tj.vector_layers || []).forEach((vl, n) => {
    const c = palette[n % palette.length];
    const polygon = new Style({ fill: new Fill({ color: c + '4d' }), stroke: new Stroke({ color: c, width: 1 }) });
    const line = new Style({ stroke: new Stroke({ color: c, width: 2 }) });
    const point = new Style({ image: new Circle({ radius: 4, fill: new Fill({ color: c }) }) });
    styles[vl.id] = { Polygon: polygon, MultiPolygon: polygon, LineString: line, MultiLineString: line, Point: point, MultiPoint: point };
  });
  return (feature) => (styles[feature.get('layer')] || {})[feature.getType()];
}

// showVector draws vector tile set i on tiles 512 pixels wide, whatever
// the grid's tile size: level z of the tile set is zoom z.
async function showVector(i, h, source, ts) {
  const archive = source === 'pmtiles' ? new PMTiles(rel(ts.pmtiles)) : null;
  const doc = archive ? ts.pmtiles : source === 'tms' ? ts.tileJSON : ts.tileJSONXYZ;
  const at = shownAt;
  document.body.setAttribute('data-renderer', 'vector');
  freshMap(new View({ center: [0, 0], zoom: 0 }));
  if (!doc) {
    info.textContent = 'no TileJSON for this tile set: vector tile sets are drawn in Web Mercator only';
    return;
  }
  try {
    let tj;
    if (archive) {
      tj = await archiveTileJSON(archive);
    } else {
      const r = await fetch(rel(doc), { cache: 'no-cache' });
      if (!r.ok) throw new Error(doc + ': HTTP ' + r.status);
      tj = await r.json();
    }
    const template = source === 'wmts' ? await wmtsTemplate(ts) : tj.tiles[0];
    if (at !== shownAt) return; // another tile set or source was chosen meanwhile
    const proj = getProjection('EPSG:3857');
    const top = ts.maxZoom + 1;
    const grid = createXYZ({ extent: proj.getExtent(), tileSize: 512, minZoom: tj.minzoom || 0, maxZoom: tj.maxzoom });
    const bounds = tj.bounds ? transformExtent(tj.bounds, 'EPSG:4326', proj) : proj.getExtent();
    const url = archive ? template : new URL(template, location.href).href.replace(/%7B/g, '{').replace(/%7D/g, '}');
    const format = new MVT();
    const src = new VectorTileSource({
      format, projection: proj, tileGrid: grid, transition: 0, attributions: plain(tj.attribution) || undefined,
      tileUrlFunction: (c) => {
        if (!overlaps(grid.getTileCoordExtent(c), bounds)) return undefined;
        return fill(url, c[0], c[1], source === 'tms' ? (1 << c[0]) - 1 - c[2] : c[2]);
      },
    });
    if (archive) {
      src.setTileLoadFunction((tile, u) => tile.setLoader((extent, _res, projection) => {
        archiveTile(archive, u).then((data) => {
          tile.setFeatures(data ? format.readFeatures(data, { extent, featureProjection: projection }) : []);
        }).catch(() => tile.setState(TileState.ERROR));
      }));
    }
    const layer = new VectorTileLayer({ background, style: vectorStyle(tj), source: src });
    const resolutions = Array.from({ length: top + 1 }, (_, z) => grid.getResolution(0) / 2 ** z);
    const view = new View({ projection: proj, resolutions, constrainResolution: true, multiWorld: true });
    const m = freshMap(view, layer);
    if (h.z !== undefined) {
      view.setZoom(+h.z);
      view.setCenter(fromLonLat(h.lat !== undefined && h.lon !== undefined ? [+h.lon, +h.lat] : [tj.center[0], tj.center[1]]));
    } else {
      view.fit(bounds, { size: m.getSize() });
    }
    ready(m, i);
    m.on('pointermove', (e) => {
      const ll = toLonLat(e.coordinate);
      cursor.textContent = 'lon ' + ll[0].toFixed(4) + ', lat ' + ll[1].toFixed(4) +
        '  (level ' + Math.min(ts.maxZoom, Math.floor(view.getZoom())) + ')';
    });
    info.textContent = '';
    const names = (tj.vector_layers || []).map((vl) => vl.id);
    info.append(names.length ? 'vector layers: ' : 'TileJSON lists no vector_layers yet: seed the tile set');
    names.forEach((name, n) => {
      const s = document.createElement('span');
      s.textContent = '\u25a0 ' + name + '  ';
      s.style.color = palette[n % palette.length];
      info.append(s);
    });
    const a = document.createElement('a');
    a.href = rel(doc);
    a.textContent = archive ? 'PMTiles' : 'TileJSON';
    info.append(a);
  } catch (err) {
    info.textContent = 'cannot show the ' + source + ' source: ' + err.message;
    console.error(err);
  }
}

// showRaster draws raster tile set i on the grid's own tile grid: a key's
// row is OpenLayers' row -r - 1; with flip (XYZ and WMTS paths) the URL
// counts rows from the top: rows(z) - 1 - key's row. Only the tiles of the
// grid's coverage, and of the layer's bounds when the index gives them,
// are asked for.
async function showRaster(i, h, source, ts) {
  const at = shownAt;
  document.body.setAttribute('data-renderer', 'raster');
  const proj = projectionOf(ts);
  const grid = new TileGrid({
    origin: ts.origin, resolutions: ts.resolutions, extent: ts.extent, minZoom: ts.minZoom,
    tileSize: [ts.tileWidth, ts.tileHeight],
  });
  const view = new View({ projection: proj, resolutions: ts.resolutions, constrainResolution: true, multiWorld: true, maxZoom: ts.maxZoom });
  const m = freshMap(view);
  const extent = shownExtent(ts, proj);
  if (h.z !== undefined) {
    view.setZoom(+h.z);
    view.setCenter(h.lat !== undefined && h.lon !== undefined ? toMap(ts, [+h.lon, +h.lat]) : getCenter(extent));
  } else {
    view.fit(extent, { size: m.getSize() });
  }
  snap(m, ts.origin);
  m.on('pointermove', (e) => {
    const z = Math.round(view.getZoom());
    const r = ts.resolutions[z];
    const p = e.coordinate;
    const x = Math.floor((p[0] - ts.origin[0]) / (ts.tileWidth * r));
    const y = Math.floor((p[1] - ts.origin[1]) / (ts.tileHeight * r));
    cursor.textContent = z + '/' + x + '/' + y + '  (' + p[0].toFixed(2) + ', ' + p[1].toFixed(2) + ')';
  });
  try {
    const url = await tileURL(ts, source);
    if (at !== shownAt) return; // another tile set or source was chosen meanwhile
    const flip = source !== 'tms';
    const tileSrc = (c) => {
      if (!grid.getFullTileRange(c[0])?.containsXY(c[1], c[2]) || !overlaps(grid.getTileCoordExtent(c), extent)) return undefined;
      const y = -c[2] - 1;
      return fill(url, c[0], c[1], flip ? ts.rows[c[0]] - 1 - y : y);
    };
    const loaded = new Set();
    const src = new TileImage({
      projection: proj, tileGrid: grid, transition: 0, wrapX: false, tileUrlFunction: tileSrc,
      attributions: plain(ts.attribution) || undefined,
    });
    if (source === 'pmtiles') src.setTileLoadFunction(archiveImage(new PMTiles(rel(ts.pmtiles)), ts.format));
    src.on('tileloadend', (e) => loaded.add(e.tile.getTileCoord().join('/')));
    m.addLayer(new TileLayer({ source: src }));
    ready(m, i);
    drawn = () => {
      const z = Math.round(view.getZoom());
      const box = m.getViewport().getBoundingClientRect();
      const out = [];
      grid.forEachTileCoord(view.calculateExtent(m.getSize()), z, (c) => {
        const u = tileSrc(c);
        if (!u) return;
        const e = grid.getTileCoordExtent(c);
        const tl = m.getPixelFromCoordinate([e[0], e[3]]);
        const br = m.getPixelFromCoordinate([e[2], e[1]]);
        out.push({ Src: source === 'pmtiles' ? u : new URL(u, location.href).href, Left: box.left + tl[0], Top: box.top + tl[1],
          Width: br[0] - tl[0], Height: br[1] - tl[1], Loaded: loaded.has(c.join('/')) });
      });
      return out;
    };
    info.textContent = '';
    const links = [['tiles', url], ['TMS', ts.tileMap && rel(ts.tileMap)], ['TileJSON', ts.tileJSON && rel(ts.tileJSON)],
      ['TileJSON (XYZ)', ts.tileJSONXYZ && rel(ts.tileJSONXYZ)], ['WMTS', ts.wmts && rel(ts.wmts)], ['PMTiles', ts.pmtiles && rel(ts.pmtiles)]];
    for (const [name, href] of links) {
      if (!href) continue;
      const a = document.createElement('a');
      if (name === 'tiles') a.textContent = href;
      else { a.href = href; a.textContent = name; }
      info.append(a, '  ');
    }
  } catch (err) {
    info.textContent = 'cannot show the ' + source + ' source: ' + err.message;
    console.error(err);
  }
}

function show(i, h) {
  const ts = sets[i];
  let source = ['tms', 'xyz', 'wmts', 'pmtiles'].includes(h.source) ? h.source : sourceSelect.value;
  // Only a tile set with an archive offers it.
  sourceSelect.querySelector('option[value="pmtiles"]').disabled = !ts.pmtiles;
  if (source === 'pmtiles' && !ts.pmtiles) source = 'tms';
  sourceSelect.value = source;
  document.body.removeAttribute('data-ready');
  shownAt++;
  if (ts.format === mvt) showVector(i, h, source, ts);
  else showRaster(i, h, source, ts);
}

// demoTiles lists the raster tiles of the level shown that are in view:
// {Src, Left, Top, Width, Height (viewport pixels), Loaded}.
window.demoTiles = () => drawn();

fetch('index.json', { cache: 'no-cache' }).then((r) => {
  if (!r.ok) throw new Error('index.json: HTTP ' + r.status);
  return r.json();
}).then((idx) => {
  sets = idx.tileSets || [];
  select.textContent = '';
  if (sets.length === 0) {
    select.append(new Option('no tile sets yet: seed a layer'));
    return;
  }
  sets.forEach((ts, i) => select.append(new Option(label(ts), String(i))));
  select.disabled = false;
  const h = hash();
  const i = Math.max(0, Math.min(sets.length - 1, parseInt(h.set || '0', 10) || 0));
  select.value = String(i);
  select.addEventListener('change', () => show(+select.value, {}));
  sourceSelect.addEventListener('change', () => show(+select.value, { source: sourceSelect.value }));
  window.addEventListener('hashchange', () => {
    const h = hash();
    const j = parseInt(h.set || '0', 10) || 0;
    select.value = String(j);
    show(j, h);
  });
  show(i, h);
}).catch((err) => {
  select.textContent = '';
  select.append(new Option('no tile sets yet (' + err.message + ')'));
});
