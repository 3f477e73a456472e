// The seed area's geography, apart from any page: reading an uploaded
// area (GeoJSON, WKT or KML, in the browser), carrying a geometry from one
// grid set's CRS to another's, and the checks the form makes before it
// sends a request (the area inside the grid set, the levels within the
// layer's). Geometries are GeoJSON geometry objects throughout.
import GeoJSON from 'ol/format/GeoJSON.js';
import WKT from 'ol/format/WKT.js';
import { get as getProjection, getTransform } from 'ol/proj.js';
import { MERCATOR_LAT } from './outline.js';

// kindOf names the format of an uploaded area from its text (and its
// file name when the text does not tell): "geojson", "kml" or "wkt".
export function kindOf(text, name = '') {
  const t = text.trimStart();
  if (t.startsWith('{')) return 'geojson';
  if (t.startsWith('<')) return 'kml';
  if (/\.(geo)?json$/i.test(name)) return 'geojson';
  if (/\.kml$/i.test(name)) return 'kml';
  return 'wkt';
}

// geometriesOf returns the geometries of a GeoJSON object: a geometry,
// a Feature, or a FeatureCollection (features without one are skipped).
function geometriesOf(o) {
  if (!o || typeof o !== 'object') throw new Error('not a GeoJSON object');
  switch (o.type) {
    case 'FeatureCollection':
      if (!Array.isArray(o.features)) throw new Error('a FeatureCollection without features');
      return o.features.flatMap((f) => (f && f.geometry ? geometriesOf(f.geometry) : []));
    case 'Feature':
      return o.geometry ? geometriesOf(o.geometry) : [];
    case 'GeometryCollection':
      return (o.geometries || []).flatMap(geometriesOf);
    case 'Point': case 'MultiPoint': case 'LineString': case 'MultiLineString': case 'Polygon': case 'MultiPolygon':
      if (!Array.isArray(o.coordinates)) throw new Error(`a ${o.type} without coordinates`);
      return [{ type: o.type, coordinates: o.coordinates }];
    default:
      throw new Error(`unknown GeoJSON type ${JSON.stringify(o.type)}`);
  }
}

// parseKML returns the geometries of a KML document: its Points,
// LineStrings and Polygons (with their holes), wherever they are
// (Placemarks, MultiGeometries, Folders). KML coordinates are longitude,
// latitude (and an altitude, dropped).
export function parseKML(text) {
  const doc = new DOMParser().parseFromString(text, 'application/xml');
  if (doc.getElementsByTagName('parsererror').length) throw new Error('not well-formed XML');
  const all = (parent, local) => [...parent.getElementsByTagName('*')].filter((x) => local === '*' || x.localName === local);
  const coords = (e) => {
    const c = all(e, 'coordinates')[0];
    if (!c) throw new Error(`a ${e.localName} without coordinates`);
    const pts = c.textContent.trim().split(/\s+/).filter(Boolean).map((t) => {
      const v = t.split(',').map(Number);
      if (v.length < 2 || !isFinite(v[0]) || !isFinite(v[1])) throw new Error(`coordinate ${JSON.stringify(t)} is not longitude,latitude`);
      return [v[0], v[1]];
    });
    if (!pts.length) throw new Error(`a ${e.localName} without coordinates`);
    return pts;
  };
  const ring = (r) => {
    const pts = coords(r);
    const [a, b] = [pts[0], pts[pts.length - 1]];
    if (a[0] !== b[0] || a[1] !== b[1]) pts.push(a.slice());
    return pts;
  };
  const out = [];
  for (const e of all(doc, '*')) {
    switch (e.localName) {
      case 'Point': out.push({ type: 'Point', coordinates: coords(e)[0] }); break;
      case 'LineString': out.push({ type: 'LineString', coordinates: coords(e) }); break;
      case 'Polygon': {
        const outer = all(e, 'outerBoundaryIs').flatMap((b) => all(b, 'LinearRing'));
        if (!outer.length) throw new Error('a Polygon without outerBoundaryIs');
        const inner = all(e, 'innerBoundaryIs').flatMap((b) => all(b, 'LinearRing'));
        out.push({ type: 'Polygon', coordinates: [ring(outer[0]), ...inner.map(ring)] });
        break;
      }
      default:
    }
  }
  return out;
}

// parseArea reads an uploaded area: {kind, geometries, srid} where srid
// is the EPSG code an EWKT "SRID=n;" prefix or a GeoJSON "crs" member
// names (0: not said). It throws an Error naming what is wrong.
export function parseArea(text, name = '') {
  const kind = kindOf(text, name);
  let geometries;
  let srid = 0;
  try {
    if (kind === 'geojson') {
      const o = JSON.parse(text);
      const crs = o?.crs?.properties?.name;
      const m = typeof crs === 'string' && /EPSG:+(\d+)$/i.exec(crs);
      if (m && m[1] !== '4326') srid = Number(m[1]);
      geometries = geometriesOf(o);
    } else if (kind === 'kml') {
      geometries = parseKML(text);
    } else {
      let body = text.trim();
      const m = /^SRID=(\d+);/i.exec(body);
      if (m) { srid = Number(m[1]) === 4326 ? 0 : Number(m[1]); body = body.slice(m[0].length); }
      const g = new WKT().readGeometry(body);
      if (!g) throw new Error('not WKT');
      geometries = geometriesOf(new GeoJSON().writeGeometryObject(g));
    }
  } catch (e) {
    throw new Error(`${{ geojson: 'GeoJSON', kml: 'KML', wkt: 'WKT' }[kind]}: ${e.message}`, { cause: e });
  }
  if (!geometries.length) throw new Error(`${kind === 'kml' ? 'KML' : kind === 'wkt' ? 'WKT' : 'GeoJSON'}: no geometry in the file`);
  return { kind, geometries, srid };
}

// asFeatureCollection writes geometries as a GeoJSON FeatureCollection
// (what the server reads of a KML upload, converted here).
export function asFeatureCollection(geometries) {
  return { type: 'FeatureCollection', features: geometries.map((geometry) => ({ type: 'Feature', properties: {}, geometry })) };
}

// mapCoords returns a GeoJSON geometry with fn applied to each position.
export function mapCoords(g, fn) {
  const walk = (c) => (typeof c[0] === 'number' ? fn(c) : c.map(walk));
  return { type: g.type, coordinates: walk(g.coordinates) };
}

// extentOf is the bounding box [minx, miny, maxx, maxy] of geometries.
export function extentOf(geometries) {
  const e = [Infinity, Infinity, -Infinity, -Infinity];
  for (const g of geometries) {
    mapCoords(g, (p) => {
      e[0] = Math.min(e[0], p[0]); e[1] = Math.min(e[1], p[1]);
      e[2] = Math.max(e[2], p[0]); e[3] = Math.max(e[3], p[1]);
      return p;
    });
  }
  return e;
}

const isMercator = (p) => getProjection(p)?.getCode() === 'EPSG:3857';

// transformer returns a function carrying a position from projection
// `from` to `to` (OpenLayers projections or codes), or null when the
// browser knows no way between them. Into the spherical Mercator,
// latitudes are first held to its square world's (the poles have no
// place in it).
export function transformer(from, to) {
  const a = getProjection(from);
  const b = getProjection(to);
  if (!a || !b) return null;
  if (a === b || a.getCode() === b.getCode()) return (p) => p.slice(0, 2);
  if (isMercator(b) && !isMercator(a)) {
    const toLonLat = a.getCode() === 'EPSG:4326' ? (p) => p : getTransform(a, 'EPSG:4326');
    const fwd = getTransform('EPSG:4326', b);
    if (!toLonLat || !fwd) return null;
    return (p) => {
      const ll = toLonLat(p.slice(0, 2));
      return fwd([ll[0], Math.max(-MERCATOR_LAT, Math.min(MERCATOR_LAT, ll[1]))]);
    };
  }
  const t = getTransform(a, b);
  return t ? (p) => t(p.slice(0, 2)) : null;
}

// reproject carries GeoJSON geometries from one projection to another,
// or returns null when the browser knows no way between them.
export function reproject(geometries, from, to) {
  const t = transformer(from, to);
  if (!t) return null;
  return geometries.map((g) => mapCoords(g, t));
}

// outside returns whether extent e leaves extent within (beyond a
// millionth of its size, for rounding).
export function outside(e, within) {
  const tx = (within[2] - within[0]) * 1e-6;
  const ty = (within[3] - within[1]) * 1e-6;
  return e[0] < within[0] - tx || e[1] < within[1] - ty || e[2] > within[2] + tx || e[3] > within[3] + ty;
}

const fmt = (v, deg) => Number(v.toFixed(deg ? 6 : 2)).toString();

// formatExtent writes an extent for a message.
export function formatExtent(e, deg) {
  return e.map((v) => fmt(v, deg)).join(', ');
}

// checkArea returns why the form must refuse a request, or '': the area
// (its extent, in the grid set's CRS; null for the whole coverage)
// leaving grid set g's extent, or levels beyond those the layer has in
// it (levels = {min, max}).
export function checkArea({ extent, zoomStart, zoomStop, g, levels }) {
  const deg = g.epsg === 4326;
  const name = g.name;
  if (zoomStart !== undefined && zoomStop !== undefined && zoomStart > zoomStop) {
    return `From level ${zoomStart} is above to level ${zoomStop}.`;
  }
  for (const [what, z] of [['From', zoomStart], ['To', zoomStop]]) {
    if (z === undefined) continue;
    if (!Number.isInteger(z) || z < levels.min || z > levels.max) {
      return `${what} level ${z} is beyond the layer's levels in ${name}: ${levels.min} to ${levels.max}.`;
    }
  }
  if (extent && outside(extent, g.extent)) {
    return `The area (${formatExtent(extent, deg)}) leaves grid set ${name}'s extent (${formatExtent(g.extent, deg)}): keep it inside.`;
  }
  return '';
}

// parsePlace reads what "go to" was given: a coordinate ("x, y") or a
// bounding box ("minx, miny, maxx, maxy"), separated by commas or
// spaces; null when it is neither.
export function parsePlace(text) {
  const parts = text.trim().split(/[\s,;]+/).filter(Boolean);
  if (parts.length !== 2 && parts.length !== 4) return null;
  const v = parts.map(Number);
  if (!v.every(isFinite)) return null;
  if (v.length === 2) return { point: v };
  if (v[0] >= v[2] || v[1] >= v[3]) return null;
  return { box: v };
}
