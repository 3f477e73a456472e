// An OpenLayers map in a grid set's own projection: EPSG:4326 and the
// spherical Mercator are OpenLayers' own; any other CRS becomes a
// projection of its own from the grid set's extent and units, so
// coordinates drawn are the grid set's coordinates. The tiles of the
// grid set are outlined (OpenLayers' TileDebug source on the grid set's
// tile grid). Under them, a layer's stored tiles may be drawn (setBase):
// each is fetched with X-Tilecache-Stored-Only: 1 (the server's spelling
// of Cache-Control: only-if-cached, which Chromium keeps for its own
// cache), answered from storage alone (504 when the tile is not stored), so the
// map never makes the server render, store or call an upstream; a
// missing tile stays empty, and the map shows what is cached where. A
// stored-only read is an account's (it tells which areas were viewed
// without rendering them): the browser answers its challenge with the
// credentials it holds for the console. A private layer's tiles carry the
// console's tile token (tiletoken.js) in their URLs; until it is held,
// none of them is asked for.
//
// Under everything lies the world's outline (outline.js), in the grid
// set's projection; the cursor's coordinates (the grid set's, and
// longitude and latitude), a scale line and, on demand, a graticule help
// find a place. The view is held to the grid set's extent and no source
// repeats the world: nothing can be drawn on a copy west of −180°.
//
// The stored tiles drawn are asked again (refreshBase) as lanes write
// them: the tiles shown stay until their new reads answer. An operator's
// base map (TILECACHE_CONSOLE_BASE_MAP, named by the page's
// <meta name="tilecache-base-map">) may lie under everything, in place of
// the outline; without one, no request leaves the service.
import Map from 'ol/Map.js';
import View from 'ol/View.js';
import TileLayer from 'ol/layer/Tile.js';
import VectorLayer from 'ol/layer/Vector.js';
import VectorSource from 'ol/source/Vector.js';
import TileDebug from 'ol/source/TileDebug.js';
import TileImage from 'ol/source/TileImage.js';
import XYZ from 'ol/source/XYZ.js';
import TileState from 'ol/TileState.js';
import TileGrid from 'ol/tilegrid/TileGrid.js';
import Projection from 'ol/proj/Projection.js';
import { get as getProjection, addProjection } from 'ol/proj.js';
import { defaults as defaultControls } from 'ol/control/defaults.js';
import MousePosition from 'ol/control/MousePosition.js';
import ScaleLine from 'ol/control/ScaleLine.js';
import Graticule from 'ol/layer/Graticule.js';
import { toLonLat } from 'ol/proj.js';
import { defaults as defaultInteractions } from 'ol/interaction/defaults.js';
import Feature from 'ol/Feature.js';
import { fromExtent } from 'ol/geom/Polygon.js';
import { Style, Stroke, Fill } from 'ol/style.js';
import { tokenFor, withToken, onChange } from './tiletoken.js';
import { outlineFeatures } from './outline.js';

// projectionOf returns the OpenLayers projection of a grid set.
export function projectionOf(g) {
  if (g.epsg === 4326) return getProjection('EPSG:4326');
  if ([900913, 3857, 102113, 102100].includes(g.epsg)) return getProjection('EPSG:3857');
  const code = g.epsg ? 'EPSG:' + g.epsg : 'GRIDSET:' + g.name;
  let p = getProjection(code);
  if (!p) {
    p = new Projection({ code, extent: g.extent, units: g.metersPerUnit === 1 ? 'm' : undefined, metersPerUnit: g.metersPerUnit });
    addProjection(p);
  }
  return p;
}

// tileGridOf returns the grid set's tile grid: GeoWebCache grids grow from
// the extent's bottom-left corner (top-left when aligned so).
export function tileGridOf(g) {
  const [minx, miny, , maxy] = g.extent;
  const origins = g.resolutions.map((r) => {
    if (g.topLeft) return [minx, maxy];
    const rows = Math.ceil((maxy - miny) / (r * g.tileHeight) - 1e-9);
    return [minx, miny + rows * r * g.tileHeight];
  });
  return new TileGrid({ extent: g.extent, origins, resolutions: g.resolutions, tileSize: [g.tileWidth, g.tileHeight] });
}

// viewOptions returns the options of a view of grid set g: its
// resolutions, and its extent as a hard limit (the whole viewport, not
// only its centre, stays inside once zoomed in; zoomed out, the whole
// extent is shown, centred), with no elastic overshoot.
export function viewOptions(g, projection) {
  return {
    projection, resolutions: g.resolutions, extent: g.extent.slice(),
    constrainOnlyCenter: false, showFullExtent: true, smoothExtentConstraint: false,
  };
}

// formatCursor writes a coordinate of grid set g: in its CRS (degrees
// to 6 decimals, else 2), then in longitude and latitude when lonLat is
// known.
export function formatCursor(g, c, lonLat) {
  const deg = g.epsg === 4326;
  const d = deg ? 6 : 2;
  const crs = g.epsg ? 'EPSG:' + g.epsg : g.name;
  let s = `${crs} ${c[0].toFixed(d)}, ${c[1].toFixed(d)}`;
  if (lonLat && !deg) {
    const [lon, lat] = lonLat;
    s += ` · ${Math.abs(lon).toFixed(5)}° ${lon < 0 ? 'W' : 'E'}, ${Math.abs(lat).toFixed(5)}° ${lat < 0 ? 'S' : 'N'}`;
  }
  return s;
}

// Tile formats of the key layout (tilestore.Format): MIME type → [short
// name, extension]; the base map draws the image formats among them.
const FORMATS = {
  'image/png': ['png', 'png'], 'image/jpeg': ['jpeg', 'jpeg'], 'image/gif': ['gif', 'gif'], 'image/png8': ['png8', 'png'],
  'image/png24': ['png24', 'png'], 'image/png; mode=24bit': ['png_24', 'png'],
};

// baseStats counts the base map's tile reads (window.consoleBase, read by
// the tests): asked, found (stored, drawn), missing and failed.
export const baseStats = { asked: 0, found: 0, missing: 0, failed: 0 };
window.consoleBase = baseStats;

const tilesRoot = new URL('../tiles/', location.href);
const seg = (s) => encodeURIComponent(s).replace(/%3A/gi, ':');

// loadStored loads one base tile from storage only.
function loadStored(tile, src) {
  baseStats.asked++;
  fetch(src, { headers: { 'X-Tilecache-Stored-Only': '1' }, credentials: 'same-origin' })
    .then(async (r) => {
      if (!r.ok) {
        if (r.status === 504 || r.status === 404) baseStats.missing++; else { baseStats.failed++; baseStats.error = 'HTTP ' + r.status; }
        tile.setState(TileState.EMPTY);
        return;
      }
      const url = URL.createObjectURL(await r.blob());
      const img = tile.getImage();
      img.addEventListener('load', () => URL.revokeObjectURL(url), { once: true });
      img.src = url;
      baseStats.found++;
    })
    .catch((e) => { baseStats.failed++; baseStats.error = String(e); tile.setState(TileState.ERROR); });
}

// baseMapURL is the operator's base map template, or ''.
export function baseMapURL(doc = document) {
  return doc.querySelector('meta[name="tilecache-base-map"]')?.content || '';
}

const LAND = new Style({ fill: new Fill({ color: '#e9eef2' }), stroke: new Stroke({ color: '#8a9aab', width: 1 }) });
const BORDER = new Style({ stroke: new Stroke({ color: '#b4bfcb', width: 0.75 }) });

// GridMap is a map of one grid set at a time, with a vector layer on top.
export class GridMap {
  // cursor, when given, is the element that shows the cursor's
  // coordinates.
  constructor(target, label, cursor) {
    target.setAttribute('role', 'application');
    target.setAttribute('aria-label', label);
    this.source = new VectorSource({ wrapX: false });
    this.vector = new VectorLayer({ source: this.source });
    // The world's outline, under the stored tiles.
    this.outlineLayer = new VectorLayer({
      className: 'world-outline', zIndex: -2, updateWhileInteracting: true,
      style: (f) => (f.get('kind') === 'land' ? LAND : BORDER),
    });
    this.graticule = new Graticule({ visible: false, wrapX: false, showLabels: true, strokeStyle: new Stroke({ color: 'rgba(40,60,90,0.35)', width: 1, lineDash: [2, 4] }) });
    this.tiles = new TileLayer({ opacity: 0.6 });
    // Drawn first (zIndex), listed last: the outlines and the drawing
    // keep their places in the map's layers.
    this.base = new TileLayer({ className: 'base-tiles', zIndex: -1 });
    this.baseKey = '';
    this.baseGen = 0;
    // The operator's base map, under everything.
    this.baseMap = new TileLayer({ className: 'base-map', zIndex: -3, visible: false });
    this.target = target;
    this.map = new Map({
      controls: defaultControls({ attribution: false, rotate: false }).extend([
        new ScaleLine(),
        ...(cursor ? [new MousePosition({ target: cursor, placeholder: 'Move the cursor over the map for its coordinates.', coordinateFormat: (c) => this.cursorText(c) })] : []),
      ]),
      interactions: defaultInteractions({ altShiftDragRotate: false, pinchRotate: false }),
      layers: [this.tiles, this.vector, this.base, this.outlineLayer, this.graticule, this.baseMap],
      keyboardEventTarget: target,
    });
    target.tabIndex = 0;
    this.grid = null;
    this.baseArg = null;
    // A private layer drawn before the token came, or whose layers it
    // opens changed: draw it again (a renewed token only changes the URLs
    // of the tiles asked from then on).
    onChange(() => this.setBase(this.baseArg));
  }

  // setGridSet shows grid set g (its definition, see model.gridSet).
  setGridSet(g) {
    if (this.grid && this.grid.name === g.name) return;
    this.grid = g;
    const projection = projectionOf(g);
    const tileGrid = tileGridOf(g);
    this.tiles.setSource(new TileDebug({ projection, tileGrid, template: 'z{z} x{x}', color: '#667', wrapX: false }));
    this.outlineLayer.setSource(new VectorSource({ wrapX: false, features: outlineFeatures(projection) }));
    this.lonLat = this.outlineLayer.getSource().getFeatures().length > 0; // longitude and latitude are reachable
    const outline = new Feature(fromExtent(g.extent));
    outline.setStyle(new Style({ stroke: new Stroke({ color: '#334', width: 1 }), fill: new Fill({ color: 'rgba(0,0,0,0)' }) }));
    this.outline = outline;
    const view = new View(viewOptions(g, projection));
    this.map.setView(view);
    this.baseKey = null; // a new grid: setBase builds its source again
    this.setBaseMap(this.baseMapOn);
    view.fit(g.extent, { size: this.map.getSize() || [600, 400] });
    this.source.clear();
  }

  // setBase draws the stored tiles of a tile set under the outlines:
  // b = {layer, format (MIME type), query ("" or "?K=v&…")}, or null for
  // none. Formats other than images draw nothing.
  setBase(b) {
    this.baseArg = b;
    const g = this.grid;
    const f = b && g && FORMATS[b.format];
    // null while a private layer's token is not held: nothing is drawn.
    const token = f ? tokenFor(b.layer) : '';
    const key = f ? [b.layer, g.name, b.format, b.query, token === null ? 'waiting' : token ? 'token' : 'public'].join('|') : '';
    if (key === this.baseKey) return;
    this.baseKey = key;
    if (!f || token === null) { this.base.setSource(null); return; }
    const [id, ext] = f;
    const tileGrid = tileGridOf(g);
    const [, miny, , maxy] = g.extent;
    // Stored rows count from the bottom; OpenLayers' from the top.
    const rows = g.resolutions.map((r) => Math.ceil((maxy - miny) / (r * g.tileHeight) - 1e-9));
    const prefix = `${seg(b.layer)}/${seg(g.name)}/${id}/`;
    this.base.setSource(new TileImage({
      projection: projectionOf(g), tileGrid, transition: 0, wrapX: false,
      tileUrlFunction: ([z, x, y]) => withToken(new URL(`./${prefix}${z}/${x}/${rows[z] - 1 - y}.${ext}${b.query}`, tilesRoot).href, b.layer),
      tileLoadFunction: loadStored,
    }));
  }

  // refreshBase asks the stored tiles shown again (a new source key: the
  // tiles drawn stay until their new reads answer).
  refreshBase() {
    const s = this.base.getSource();
    if (s) s.setKey('gen' + ++this.baseGen);
  }

  // canBaseMap tells whether the operator's base map can be drawn in the
  // grid set shown (one is configured, and the grid set's CRS is reached
  // from the spherical Mercator).
  canBaseMap() {
    return !!baseMapURL() && !!this.lonLat;
  }

  // setBaseMap shows or hides the operator's base map (in place of the
  // world's outline, which would cover it).
  setBaseMap(on) {
    this.baseMapOn = !!on;
    const show = this.baseMapOn && this.canBaseMap();
    if (show && !this.baseMap.getSource()) {
      this.baseMap.setSource(new XYZ({ url: baseMapURL(), projection: 'EPSG:3857', wrapX: false, transition: 0 }));
    }
    this.baseMap.setVisible(show);
    this.outlineLayer.setVisible(!show);
  }

  // cursorText is the text of the cursor's coordinate c (in the grid
  // set's CRS).
  cursorText(c) {
    const g = this.grid;
    if (!g || !c) return '';
    return formatCursor(g, c, this.lonLat ? toLonLat(c, projectionOf(g)) : null);
  }

  // setGraticule shows or hides the graticule (none where longitude and
  // latitude cannot be reached).
  setGraticule(on) {
    this.graticule.setVisible(!!on && !!this.lonLat);
  }

  // attach renders the map into its element; call it once the element is
  // shown (a map in a hidden element has no size).
  attach() {
    if (!this.map.getTarget()) this.map.setTarget(this.target);
    this.map.updateSize();
  }

  fit(extent) {
    this.map.getView().fit(extent, { size: this.map.getSize(), padding: [20, 20, 20, 20] });
  }
}
