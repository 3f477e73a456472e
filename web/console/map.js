// An OpenLayers map in a grid set's own projection: EPSG:4326 and the
// spherical Mercator are OpenLayers' own; any other CRS becomes a
// projection of its own from the grid set's extent and units, so
// coordinates drawn are the grid set's coordinates. The tiles of the
// grid set are outlined (OpenLayers' TileDebug source on the grid set's
// tile grid): the console draws no base map, so it fetches no tile.
import Map from 'ol/Map.js';
import View from 'ol/View.js';
import TileLayer from 'ol/layer/Tile.js';
import VectorLayer from 'ol/layer/Vector.js';
import VectorSource from 'ol/source/Vector.js';
import TileDebug from 'ol/source/TileDebug.js';
import TileGrid from 'ol/tilegrid/TileGrid.js';
import Projection from 'ol/proj/Projection.js';
import { get as getProjection, addProjection } from 'ol/proj.js';
import { defaults as defaultControls } from 'ol/control/defaults.js';
import { defaults as defaultInteractions } from 'ol/interaction/defaults.js';
import Feature from 'ol/Feature.js';
import { fromExtent } from 'ol/geom/Polygon.js';
import { Style, Stroke, Fill } from 'ol/style.js';

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

// GridMap is a map of one grid set at a time, with a vector layer on top.
export class GridMap {
  constructor(target, label) {
    target.setAttribute('role', 'application');
    target.setAttribute('aria-label', label);
    this.source = new VectorSource();
    this.vector = new VectorLayer({ source: this.source });
    this.tiles = new TileLayer({ opacity: 0.6 });
    this.target = target;
    this.map = new Map({
      controls: defaultControls({ attribution: false, rotate: false }),
      interactions: defaultInteractions({ altShiftDragRotate: false, pinchRotate: false }),
      layers: [this.tiles, this.vector],
      keyboardEventTarget: target,
    });
    target.tabIndex = 0;
    this.grid = null;
  }

  // setGridSet shows grid set g (its definition, see model.gridSet).
  setGridSet(g) {
    if (this.grid && this.grid.name === g.name) return;
    this.grid = g;
    const projection = projectionOf(g);
    const tileGrid = tileGridOf(g);
    this.tiles.setSource(new TileDebug({ projection, tileGrid, template: 'z{z} x{x}', color: '#667' }));
    const outline = new Feature(fromExtent(g.extent));
    outline.setStyle(new Style({ stroke: new Stroke({ color: '#334', width: 1 }), fill: new Fill({ color: 'rgba(0,0,0,0)' }) }));
    this.outline = outline;
    const view = new View({ projection, resolutions: g.resolutions, extent: g.extent, constrainOnlyCenter: true, showFullExtent: true });
    this.map.setView(view);
    view.fit(g.extent, { size: this.map.getSize() || [600, 400] });
    this.source.clear();
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
