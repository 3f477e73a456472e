// The world's outline under the seed map: the land and the borders
// between countries of Natural Earth at 1:110m (public domain), held in
// the bundle (world-atlas's TopoJSON, turned into GeoJSON by
// topojson-client), so no request leaves the service for it. It is
// drawn in the grid set's projection where OpenLayers can reach it from
// longitude and latitude (EPSG:4326, the spherical Mercator); a grid set
// of another CRS has no outline.
import world from 'world-atlas/countries-110m.json';
import { feature, mesh } from 'topojson-client';
import GeoJSON from 'ol/format/GeoJSON.js';
import { get as getProjection, getTransform } from 'ol/proj.js';

// outlineGeoJSON returns the outline as GeoJSON features in longitude,
// latitude: the land (one MultiPolygon) and the borders between
// countries (one MultiLineString, each border once).
export function outlineGeoJSON(topology = world) {
  const land = feature(topology, topology.objects.land);
  const lands = land.type === 'FeatureCollection' ? land.features : [land];
  const borders = mesh(topology, topology.objects.countries, (a, b) => a !== b);
  return [
    ...lands.map((f) => ({ ...f, properties: { kind: 'land' } })),
    { type: 'Feature', geometry: borders, properties: { kind: 'border' } },
  ];
}

// MERCATOR_LAT is the latitude at which the spherical Mercator's square
// world ends.
export const MERCATOR_LAT = 85.0511287798066;

// clampLatitudes returns the features with every latitude held to
// ±limit (in place of the poles, which the Mercator sends to infinity).
export function clampLatitudes(features, limit) {
  const clamp = (c) => (typeof c[0] === 'number' ? [c[0], Math.max(-limit, Math.min(limit, c[1]))] : c.map(clamp));
  return features.map((f) => ({ ...f, geometry: { ...f.geometry, coordinates: clamp(f.geometry.coordinates) } }));
}

// outlineFeatures returns the outline's OpenLayers features in the
// projection given, or none when there is no way to it from longitude
// and latitude.
export function outlineFeatures(projection) {
  const p = getProjection(projection);
  if (!p || !getTransform('EPSG:4326', p)) return [];
  let feats = outlineGeoJSON();
  if (p.getCode() === 'EPSG:3857') feats = clampLatitudes(feats, MERCATOR_LAT);
  return new GeoJSON().readFeatures({ type: 'FeatureCollection', features: feats }, { dataProjection: 'EPSG:4326', featureProjection: p });
}
