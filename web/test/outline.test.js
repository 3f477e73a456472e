import { describe, it, expect } from 'vitest';
import { outlineGeoJSON, clampLatitudes, outlineFeatures, MERCATOR_LAT } from '../console/outline.js';
import { projectionOf } from '../console/map.js';

// bounds returns the [minx, miny, maxx, maxy] of nested coordinates.
function bounds(coords) {
  const b = [Infinity, Infinity, -Infinity, -Infinity];
  const walk = (c) => {
    if (typeof c[0] === 'number') {
      b[0] = Math.min(b[0], c[0]); b[1] = Math.min(b[1], c[1]); b[2] = Math.max(b[2], c[0]); b[3] = Math.max(b[3], c[1]);
    } else c.forEach(walk);
  };
  walk(coords);
  return b;
}

describe('outlineGeoJSON', () => {
  it('holds the land and the borders, in longitude and latitude', () => {
    const fs = outlineGeoJSON();
    expect(fs.map((f) => f.properties.kind)).toEqual(['land', 'border']);
    expect(fs[0].geometry.type).toBe('MultiPolygon');
    expect(fs[0].geometry.coordinates.length).toBeGreaterThan(100);
    expect(fs[1].geometry.type).toBe('MultiLineString');
    const [minx, miny, maxx, maxy] = bounds(fs.map((f) => f.geometry.coordinates));
    expect(minx).toBeGreaterThanOrEqual(-180);
    expect(maxx).toBeLessThanOrEqual(180);
    expect(miny).toBeLessThan(-80); // Antarctica
    expect(maxy).toBeGreaterThan(80); // the Arctic islands
  });
});

describe('clampLatitudes', () => {
  it('holds every latitude to ±limit and keeps longitudes', () => {
    const f = { type: 'Feature', geometry: { type: 'Polygon', coordinates: [[[-180, -90], [180, -90], [10, 89], [-180, -90]]] } };
    const [g] = clampLatitudes([f], 85);
    expect(g.geometry.coordinates).toEqual([[[-180, -85], [180, -85], [10, 85], [-180, -85]]]);
    expect(f.geometry.coordinates[0][0]).toEqual([-180, -90]); // the input is left as it was
  });
});

describe('outlineFeatures', () => {
  it('is in degrees for EPSG:4326', () => {
    const fs = outlineFeatures(projectionOf({ epsg: 4326 }));
    expect(fs.length).toBe(2);
    const e = fs[0].getGeometry().getExtent();
    expect(e[0]).toBeGreaterThanOrEqual(-180);
    expect(e[2]).toBeLessThanOrEqual(180);
  });

  it('is finite and inside the square world in the spherical Mercator', () => {
    const half = 20037508.342789244;
    for (const f of outlineFeatures(projectionOf({ epsg: 900913 }))) {
      const e = f.getGeometry().getExtent();
      expect(e.every(Number.isFinite)).toBe(true);
      expect(e[0]).toBeGreaterThanOrEqual(-half - 1);
      expect(e[1]).toBeGreaterThanOrEqual(-half - 1);
      expect(e[2]).toBeLessThanOrEqual(half + 1);
      expect(e[3]).toBeLessThanOrEqual(half + 1);
    }
    expect(MERCATOR_LAT).toBeCloseTo(85.0511, 4);
  });

  it('is empty for a CRS that longitude and latitude cannot reach', () => {
    expect(outlineFeatures(projectionOf({ name: 'plant', epsg: 0, extent: [0, 0, 1000, 500], metersPerUnit: 1 }))).toEqual([]);
  });
});
