import { describe, it, expect } from 'vitest';
import View from 'ol/View.js';
import { projectionOf, tileGridOf, viewOptions, formatCursor } from '../console/map.js';

describe('projectionOf', () => {
  it('maps the Web Mercator codes to EPSG:3857 and 4326 to itself', () => {
    for (const epsg of [900913, 3857, 102113, 102100]) expect(projectionOf({ epsg }).getCode()).toBe('EPSG:3857');
    expect(projectionOf({ epsg: 4326 }).getCode()).toBe('EPSG:4326');
  });

  it('makes a projection of the grid set for another code, once', () => {
    const g = { name: 'local', epsg: 0, extent: [0, 0, 1000, 500], metersPerUnit: 1 };
    const p = projectionOf(g);
    expect(p.getCode()).toBe('GRIDSET:local');
    expect(p.getExtent()).toEqual([0, 0, 1000, 500]);
    expect(p.getUnits()).toBe('m');
    expect(projectionOf(g)).toBe(p);
    const feet = projectionOf({ name: 'ft', epsg: 2227, extent: [0, 0, 10, 10], metersPerUnit: 0.3048 });
    expect(feet.getCode()).toBe('EPSG:2227');
    expect(feet.getMetersPerUnit()).toBe(0.3048);
  });
});

describe('tileGridOf', () => {
  it('grows each level from the bottom-left corner: its origin is the top of the rows covering the extent', () => {
    // 300 units high, tiles of 256 px: at 1 unit/px two rows (512 units), at 0.5 three rows (384).
    const g = { extent: [10, 20, 1010, 320], resolutions: [1, 0.5], tileWidth: 256, tileHeight: 256, topLeft: false };
    const grid = tileGridOf(g);
    expect(grid.getOrigin(0)).toEqual([10, 20 + 512]);
    expect(grid.getOrigin(1)).toEqual([10, 20 + 384]);
    expect(grid.getResolutions()).toEqual([1, 0.5]);
    expect(grid.getTileSize(0)).toEqual([256, 256]);
    expect(grid.getExtent()).toEqual([10, 20, 1010, 320]);
  });

  it('takes the extent exactly when it is a whole number of rows', () => {
    const grid = tileGridOf({ extent: [-180, -90, 180, 90], resolutions: [180 / 256], tileWidth: 256, tileHeight: 256, topLeft: false });
    expect(grid.getOrigin(0)).toEqual([-180, 90]);
  });

  it('starts at the top-left corner when aligned so', () => {
    const grid = tileGridOf({ extent: [10, 20, 1010, 320], resolutions: [1, 0.5], tileWidth: 512, tileHeight: 256, topLeft: true });
    expect(grid.getOrigin(0)).toEqual([10, 320]);
    expect(grid.getOrigin(1)).toEqual([10, 320]);
    expect(grid.getTileSize(1)).toEqual([512, 256]);
  });
});

describe('viewOptions', () => {
  it('holds the whole view, not only its centre, to the grid set\'s extent, without overshoot', () => {
    const g = { extent: [-180, -90, 180, 90], resolutions: [0.7, 0.35] };
    const o = viewOptions(g, 'EPSG:4326');
    expect(o.extent).toEqual([-180, -90, 180, 90]);
    expect(o.extent).not.toBe(g.extent);
    expect(o.constrainOnlyCenter).toBe(false);
    expect(o.smoothExtentConstraint).toBe(false);
    expect(o.showFullExtent).toBe(true);
    expect(o.resolutions).toEqual([0.7, 0.35]);
  });

  it('keeps a view panned west of the extent inside it', () => {
    const g = { extent: [-180, -90, 180, 90], resolutions: [0.7, 0.35, 0.175, 0.0875] };
    const view = new View(viewOptions(g, 'EPSG:4326'));
    view.setViewportSize([400, 300]);
    view.setResolution(0.0875);
    view.setCenter([-400, 0]);
    const e = view.calculateExtent([400, 300]);
    expect(e[0]).toBeGreaterThanOrEqual(-180 - 1e-9);
    expect(view.getCenter()[0]).toBeCloseTo(-180 + 200 * 0.0875, 9);
  });
});

describe('formatCursor', () => {
  it('writes degrees once for EPSG:4326', () => {
    expect(formatCursor({ epsg: 4326 }, [-12.3456789, 45.5], [-12.3456789, 45.5])).toBe('EPSG:4326 -12.345679, 45.500000');
  });

  it('writes the grid set\'s coordinates and then longitude and latitude', () => {
    expect(formatCursor({ epsg: 900913 }, [1000000.123, -2000000], [8.98315, -17.66])).toBe('EPSG:900913 1000000.12, -2000000.00 · 8.98315° E, 17.66000° S');
    expect(formatCursor({ epsg: 0, name: 'plant' }, [1, 2], null)).toBe('plant 1.00, 2.00');
  });
});
