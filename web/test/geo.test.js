import { describe, it, expect } from 'vitest';
import {
  kindOf, parseKML, parseArea, asFeatureCollection, reproject, transformer, extentOf, outside, checkArea, parsePlace,
} from '../console/geo.js';
import { projectionOf } from '../console/map.js';
import { MERCATOR_LAT } from '../console/outline.js';

const R = 6378137;
const HALF = Math.PI * R; // the spherical Mercator's half width, metres

describe('kindOf', () => {
  it('tells the format from the text first, then the name', () => {
    expect(kindOf(' {"type":"Point"}')).toBe('geojson');
    expect(kindOf('<?xml version="1.0"?><kml/>')).toBe('kml');
    expect(kindOf('POLYGON((0 0,1 0,1 1,0 0))')).toBe('wkt');
    expect(kindOf('SRID=3857;POINT(1 2)', 'area.kml')).toBe('kml');
    expect(kindOf('POINT(1 2)', 'a.wkt')).toBe('wkt');
  });
});

describe('parseArea: GeoJSON', () => {
  it('reads a geometry, a Feature and a FeatureCollection (skipping features without geometry)', () => {
    const poly = { type: 'Polygon', coordinates: [[[4.9, 58], [31.1, 69.8], [10, 71], [4.9, 58]]] };
    expect(parseArea(JSON.stringify(poly))).toEqual({ kind: 'geojson', geometries: [poly], srid: 0 });
    expect(parseArea(JSON.stringify({ type: 'Feature', properties: {}, geometry: poly })).geometries).toEqual([poly]);
    const fc = { type: 'FeatureCollection', features: [{ type: 'Feature', geometry: null }, { type: 'Feature', geometry: poly }, { type: 'Feature', geometry: { type: 'Point', coordinates: [1, 2] } }] };
    expect(parseArea(JSON.stringify(fc)).geometries.map((g) => g.type)).toEqual(['Polygon', 'Point']);
  });

  it('reads the EPSG code a crs member names', () => {
    const o = { type: 'Point', coordinates: [1e6, 2e6], crs: { type: 'name', properties: { name: 'urn:ogc:def:crs:EPSG::3857' } } };
    expect(parseArea(JSON.stringify(o)).srid).toBe(3857);
  });

  it('says what is wrong', () => {
    expect(() => parseArea('{"type":"Polygon"}')).toThrow('GeoJSON: a Polygon without coordinates');
    expect(() => parseArea('{"type":"Circle","coordinates":[1,2]}')).toThrow('GeoJSON: unknown GeoJSON type "Circle"');
    expect(() => parseArea('{"type":')).toThrow(/^GeoJSON: /);
    expect(() => parseArea('{"type":"FeatureCollection","features":[]}')).toThrow('GeoJSON: no geometry in the file');
  });
});

describe('parseArea: WKT', () => {
  it('reads WKT, with an EWKT SRID prefix', () => {
    const a = parseArea('POLYGON ((0 0, 10 0, 10 5, 0 0))');
    expect(a).toEqual({ kind: 'wkt', srid: 0, geometries: [{ type: 'Polygon', coordinates: [[[0, 0], [10, 0], [10, 5], [0, 0]]] }] });
    const b = parseArea('SRID=900913;MULTIPOINT((1 2),(3 4))');
    expect(b.srid).toBe(900913);
    expect(b.geometries).toEqual([{ type: 'MultiPoint', coordinates: [[1, 2], [3, 4]] }]);
    expect(parseArea('srid=4326;POINT(1 2)').srid).toBe(0);
  });

  it('refuses what is not WKT', () => {
    expect(() => parseArea('HELLO (1 2)')).toThrow(/^WKT: /);
  });
});

describe('parseArea: KML', () => {
  const kml = `<?xml version="1.0" encoding="UTF-8"?>
<kml xmlns="http://www.opengis.net/kml/2.2"><Document><Folder>
 <Placemark><name>Fjord</name><Polygon>
  <outerBoundaryIs><LinearRing><coordinates>4.9,58.0,0 31.1,69.8,0
     10,71,0 4.9,58.0,0</coordinates></LinearRing></outerBoundaryIs>
  <innerBoundaryIs><LinearRing><coordinates>10,62 12,62 12,63</coordinates></LinearRing></innerBoundaryIs>
 </Polygon></Placemark>
 <Placemark><MultiGeometry><LineString><coordinates>1,2 3,4</coordinates></LineString><Point><coordinates>5,6</coordinates></Point></MultiGeometry></Placemark>
</Folder></Document></kml>`;

  it('reads polygons with their holes (closed), lines and points, wherever they are', () => {
    const a = parseArea(kml, 'area.kml');
    expect(a.kind).toBe('kml');
    expect(a.geometries).toEqual([
      { type: 'Polygon', coordinates: [[[4.9, 58], [31.1, 69.8], [10, 71], [4.9, 58]], [[10, 62], [12, 62], [12, 63], [10, 62]]] },
      { type: 'LineString', coordinates: [[1, 2], [3, 4]] },
      { type: 'Point', coordinates: [5, 6] },
    ]);
    // What the server is sent of it.
    const fc = asFeatureCollection(a.geometries);
    expect(fc.type).toBe('FeatureCollection');
    expect(fc.features[2]).toEqual({ type: 'Feature', properties: {}, geometry: { type: 'Point', coordinates: [5, 6] } });
  });

  it('reads KML without a namespace', () => {
    expect(parseKML('<kml><Point><coordinates>7,8</coordinates></Point></kml>')).toEqual([{ type: 'Point', coordinates: [7, 8] }]);
  });

  it('says what is wrong', () => {
    expect(() => parseArea('<kml><Point><coordinates>7;8</coordinates></Point></kml>')).toThrow('KML: coordinate "7;8" is not longitude,latitude');
    expect(() => parseArea('<kml><Polygon></Polygon></kml>')).toThrow('KML: a Polygon without outerBoundaryIs');
    expect(() => parseArea('<kml><Point>')).toThrow('KML: not well-formed XML');
    expect(() => parseArea('<kml><name>empty</name></kml>')).toThrow('KML: no geometry in the file');
  });
});

describe('reproject', () => {
  const merc = projectionOf({ epsg: 900913 });
  const geo = projectionOf({ epsg: 4326 });

  it('carries longitude and latitude into the spherical Mercator and back', () => {
    const [g] = reproject([{ type: 'Polygon', coordinates: [[[0, 0], [180, 0], [90, 45], [0, 0]]] }], geo, merc);
    const [[a, b, c]] = g.coordinates;
    expect(a[0]).toBeCloseTo(0, 6);
    expect(a[1]).toBeCloseTo(0, 6);
    expect(b[0]).toBeCloseTo(HALF, 3);
    expect(c[0]).toBeCloseTo(HALF / 2, 3);
    expect(c[1]).toBeCloseTo(R * Math.log(Math.tan(Math.PI / 4 + Math.PI / 8)), 3);
    const [back] = reproject([g], merc, geo);
    expect(back.coordinates[0][2][0]).toBeCloseTo(90, 9);
    expect(back.coordinates[0][2][1]).toBeCloseTo(45, 9);
  });

  it('holds latitudes to the Mercator\'s square world (the poles have no place in it)', () => {
    const [g] = reproject([{ type: 'LineString', coordinates: [[-180, -90], [180, 90]] }], 'EPSG:4326', merc);
    expect(g.coordinates[0][0]).toBeCloseTo(-HALF, 3);
    expect(g.coordinates[0][1]).toBeCloseTo(-HALF, 3);
    expect(g.coordinates[1][1]).toBeCloseTo(HALF, 3);
    const t = transformer('EPSG:4326', merc);
    expect(t([0, MERCATOR_LAT])[1]).toBeCloseTo(HALF, 3);
  });

  it('drops a third coordinate and keeps a geometry in its own projection', () => {
    expect(reproject([{ type: 'Point', coordinates: [1, 2, 3] }], geo, geo)).toEqual([{ type: 'Point', coordinates: [1, 2] }]);
  });

  it('returns null where the browser knows no way', () => {
    const local = projectionOf({ name: 'plant', epsg: 0, extent: [0, 0, 1000, 1000], metersPerUnit: 1 });
    expect(reproject([{ type: 'Point', coordinates: [1, 2] }], local, geo)).toBeNull();
    expect(transformer('EPSG:4326', 'EPSG:999999')).toBeNull();
  });
});

describe('extentOf and outside', () => {
  it('bounds every position of the geometries', () => {
    expect(extentOf([{ type: 'Point', coordinates: [5, -1] }, { type: 'MultiLineString', coordinates: [[[0, 0], [2, 3]], [[-4, 1], [1, 9]]] }])).toEqual([-4, -1, 5, 9]);
  });

  it('tells an extent leaving another, rounding aside', () => {
    const world = [-180, -90, 180, 90];
    expect(outside([-180, -90, 180, 90], world)).toBe(false);
    expect(outside([-180.0000001, -90, 0, 0], world)).toBe(false);
    expect(outside([-181, 0, 0, 1], world)).toBe(true);
    expect(outside([0, 0, 1, 90.01], world)).toBe(true);
  });
});

describe('checkArea', () => {
  const g = { name: 'EPSG:4326', epsg: 4326, extent: [-180, -90, 180, 90] };
  const levels = { min: 0, max: 21 };

  it('passes an area inside the grid set at the layer\'s levels', () => {
    expect(checkArea({ extent: [-10, -10, 10, 10], zoomStart: 0, zoomStop: 21, g, levels })).toBe('');
    expect(checkArea({ extent: null, zoomStart: undefined, zoomStop: undefined, g, levels })).toBe('');
  });

  it('refuses levels beyond the layer\'s, naming them', () => {
    expect(checkArea({ extent: null, zoomStart: 0, zoomStop: 40, g, levels })).toBe('To level 40 is beyond the layer\'s levels in EPSG:4326: 0 to 21.');
    expect(checkArea({ extent: null, zoomStart: 2, zoomStop: 5, g, levels: { min: 3, max: 10 } })).toBe('From level 2 is beyond the layer\'s levels in EPSG:4326: 3 to 10.');
    expect(checkArea({ extent: null, zoomStart: 5, zoomStop: 2, g, levels })).toBe('From level 5 is above to level 2.');
  });

  it('refuses an area leaving the grid set, naming both extents', () => {
    expect(checkArea({ extent: [-251, -10, -169, 10], zoomStart: 0, zoomStop: 3, g, levels }))
      .toBe('The area (-251, -10, -169, 10) leaves grid set EPSG:4326\'s extent (-180, -90, 180, 90): keep it inside.');
  });
});

describe('parsePlace', () => {
  it('reads a coordinate or a box, with commas or spaces', () => {
    expect(parsePlace('10.5, 59.9')).toEqual({ point: [10.5, 59.9] });
    expect(parsePlace(' -10 -20  30;40 ')).toEqual({ box: [-10, -20, 30, 40] });
  });

  it('refuses anything else', () => {
    expect(parsePlace('Oslo')).toBeNull();
    expect(parsePlace('1, 2, 3')).toBeNull();
    expect(parsePlace('30, 40, -10, -20')).toBeNull();
  });
});
