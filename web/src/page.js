// The demo map page: lists the tile sets of index.json (written beside the
// tiles) and shows one on a Leaflet map. Every grid is described to Leaflet
// by the index alone: resolutions per level and the bottom-left origin of
// tile (0, 0); tile rows are counted from the bottom, as in the keys.
// URL hash: #set=N&z=Z&lat=..&lon=..&source=S selects a tile set, a
// level, a centre and how tiles are asked for: S is tms (the stored keys,
// the default), xyz (the CDN's /xyz/ paths, rows counted from the top) or
// wmts (the ResourceURL of the layer's WMTS capabilities, rows from the
// top). <body data-ready="N"> is set once tile set N's tiles loaded.
(function () {
  'use strict';
  var select = document.getElementById('tileset');
  var sourceSelect = document.getElementById('source');
  var info = document.getElementById('info');
  var cursor = document.getElementById('cursor');
  var base = location.href.replace(/[#?].*$/, '').replace(/[^/]*$/, '');
  var transparent = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAAC0lEQVR4nGNgAAIAAAUAAXpeqz8AAAAASUVORK5CYII=';
  var map = null, layer = null, sets = [];

  function hash() {
    var out = {};
    location.hash.replace(/^#/, '').split('&').forEach(function (kv) {
      var i = kv.indexOf('=');
      if (i > 0) out[decodeURIComponent(kv.slice(0, i))] = decodeURIComponent(kv.slice(i + 1));
    });
    return out;
  }

  function rel(path) { return base + path.replace(/^\.\//, ''); }

  function isMercator(srs) { return srs === 'EPSG:3857' || srs === 'EPSG:900913'; }

  // crsOf builds a Leaflet CRS for a tile set: projected coordinates are the
  // grid's units, scale(z) = 1 / resolution(z), and pixel (0, 0) is the
  // origin, so Leaflet's tile row r is the key's row -r - 1.
  function crsOf(ts) {
    var projection = isMercator(ts.srs) ? L.Projection.SphericalMercator
      : ts.srs === 'EPSG:4326' ? L.Projection.LonLat
      : {
        project: function (ll) { return L.point(ll.lng, ll.lat); },
        unproject: function (p) { return L.latLng(p.y, p.x); },
        bounds: L.bounds([ts.extent[0], ts.extent[1]], [ts.extent[2], ts.extent[3]])
      };
    var res = ts.resolutions;
    return L.extend({}, L.CRS, {
      code: ts.srs,
      projection: projection,
      transformation: new L.Transformation(1, -ts.origin[0], -1, ts.origin[1]),
      scale: function (z) {
        var i = Math.max(0, Math.min(res.length - 1, Math.floor(z)));
        return (1 / res[i]) * Math.pow(res[i] / (res[i + 1] || res[i] / 2), z - i);
      },
      zoom: function (s) {
        for (var i = 0; i < res.length; i++) {
          if (Math.abs(s * res[i] - 1) < 1e-9) return i;
        }
        return Math.log(s * res[0]) / Math.LN2;
      },
      infinite: true
    });
  }

  function latLngBounds(ts, crs) {
    if (ts.bounds) return L.latLngBounds([ts.bounds[1], ts.bounds[0]], [ts.bounds[3], ts.bounds[2]]);
    return L.latLngBounds(crs.projection.unproject(L.point(ts.extent[0], ts.extent[1])),
      crs.projection.unproject(L.point(ts.extent[2], ts.extent[3])));
  }

  // KeyTiles asks for the tiles of the tile set's coverage only: Leaflet's
  // row r is the key's row -r - 1; with flip, the URL counts rows from the
  // top (XYZ and WMTS paths): rows(z) - 1 - key's row.
  var KeyTiles = L.TileLayer.extend({
    initialize: function (url, ts, flip, options) {
      this._ts = ts;
      this._flip = flip;
      L.TileLayer.prototype.initialize.call(this, url, options);
    },
    getTileUrl: function (c) {
      var y = -c.y - 1;
      if (this._flip) y = this._ts.rows[c.z] - 1 - y;
      return this._url.replace('{z}', c.z).replace('{x}', c.x).replace('{y}', y);
    },
    _isValidTile: function (c) {
      var ts = this._ts, r = ts.resolutions[c.z];
      if (r === undefined) return false;
      var w = ts.tileWidth * r, h = ts.tileHeight * r, e = 1e-9;
      var x0 = Math.floor((ts.extent[0] - ts.origin[0]) / w + e), x1 = Math.ceil((ts.extent[2] - ts.origin[0]) / w - e) - 1;
      var y0 = Math.floor((ts.extent[1] - ts.origin[1]) / h + e), y1 = Math.ceil((ts.extent[3] - ts.origin[1]) / h - e) - 1;
      var y = -c.y - 1;
      return c.x >= x0 && c.x <= x1 && y >= y0 && y <= y1;
    }
  });

  // segment escapes a path segment as the documents do (':' kept).
  function segment(s) { return encodeURIComponent(s).replace(/%3A/gi, ':'); }

  // wmtsTemplate reads the layer's WMTS capabilities and returns its
  // ResourceURL for the tile set's format, with the tile matrix set and
  // style filled in and {z}/{x}/{y} for the tile.
  function wmtsTemplate(ts) {
    return fetch(rel(ts.wmts), { cache: 'no-cache' }).then(function (r) {
      if (!r.ok) throw new Error(ts.wmts + ': HTTP ' + r.status);
      return r.text();
    }).then(function (text) {
      var doc = new DOMParser().parseFromString(text, 'application/xml');
      var OWS = 'http://www.opengis.net/ows/1.1', WMTS = 'http://www.opengis.net/wmts/1.0';
      var layers = doc.getElementsByTagNameNS(WMTS, 'Layer');
      for (var i = 0; i < layers.length; i++) {
        var id = layers[i].getElementsByTagNameNS(OWS, 'Identifier')[0];
        if (!id || id.textContent !== ts.layerId) continue;
        var urls = layers[i].getElementsByTagNameNS(WMTS, 'ResourceURL');
        for (var j = 0; j < urls.length; j++) {
          if (urls[j].getAttribute('format') === ts.format && urls[j].getAttribute('resourceType') === 'tile') {
            return urls[j].getAttribute('template')
              .replace('{TileMatrixSet}', segment(ts.gridSet)).replace('{Style}', segment(ts.parametersId))
              .replace('{TileMatrix}', '{z}').replace('{TileCol}', '{x}').replace('{TileRow}', '{y}');
          }
        }
      }
      throw new Error(ts.wmts + ' has no ' + ts.format + ' tiles of layer ' + ts.layerId);
    });
  }

  // tileURL returns (a promise of) the tile URL template of a source.
  function tileURL(ts, source) {
    if (source === 'xyz') return Promise.resolve(rel(ts.xyz));
    if (source === 'wmts') return wmtsTemplate(ts);
    return Promise.resolve(rel(ts.tiles));
  }

  function label(ts) {
    var p = Object.keys(ts.parameters || {}).map(function (k) { return k + '=' + ts.parameters[k]; }).join('&');
    return (ts.title || ts.layer) + ' · ' + ts.gridSet + ' · ' + ts.format + (p ? ' · ' + p : '');
  }

  function show(i, h) {
    var ts = sets[i];
    var source = ['tms', 'xyz', 'wmts'].indexOf(h.source) >= 0 ? h.source : sourceSelect.value;
    sourceSelect.value = source;
    document.body.removeAttribute('data-ready');
    if (map) { map.remove(); map = null; }
    var crs = crsOf(ts);
    var bounds = latLngBounds(ts, crs);
    // No fade: a tile is drawn fully as soon as it loaded (data-ready
    // means what is shown is final).
    map = L.map('map', { crs: crs, minZoom: 0, maxZoom: ts.maxZoom, zoomSnap: 1, fadeAnimation: false });
    map.attributionControl.setPrefix(false);
    if (h.z !== undefined && h.lat !== undefined && h.lon !== undefined) {
      map.setView([+h.lat, +h.lon], +h.z);
    } else if (h.z !== undefined) {
      map.setView(bounds.getCenter(), +h.z);
    } else {
      map.fitBounds(bounds);
    }
    var shown = map;
    tileURL(ts, source).then(function (url) {
      if (map !== shown) return; // another tile set or source was chosen meanwhile
      layer = new KeyTiles(url, ts, source !== 'tms', {
        tileSize: L.point(ts.tileWidth, ts.tileHeight), minZoom: 0, maxZoom: ts.maxZoom,
        minNativeZoom: ts.minZoom, maxNativeZoom: ts.maxZoom, bounds: bounds, noWrap: true,
        attribution: ts.attribution ? ts.attribution.replace(/[<>&]/g, '') : '', errorTileUrl: transparent
      });
      layer.on('tileerror', function () { /* not seeded yet: normal */ });
      layer.on('load', function () { document.body.setAttribute('data-ready', String(i)); });
      layer.addTo(map);
      info.textContent = '';
      var links = [['tiles', url], ['TMS', ts.tileMap && rel(ts.tileMap)], ['TileJSON', ts.tileJSON && rel(ts.tileJSON)],
        ['TileJSON (XYZ)', ts.tileJSONXYZ && rel(ts.tileJSONXYZ)], ['WMTS', ts.wmts && rel(ts.wmts)]];
      links.forEach(function (l) {
        if (!l[1]) return;
        var a = document.createElement('a');
        a.href = l[0] === 'tiles' ? '#' : l[1];
        a.textContent = l[0] === 'tiles' ? l[1] : l[0];
        if (l[0] === 'tiles') a.removeAttribute('href');
        info.appendChild(a);
        info.appendChild(document.createTextNode('  '));
      });
    }).catch(function (err) {
      info.textContent = 'cannot show the ' + source + ' source: ' + err.message;
      console.error(err);
    });
    map.on('mousemove', function (e) {
      var z = map.getZoom(), r = ts.resolutions[z], p = crs.projection.project(e.latlng);
      var x = Math.floor((p.x - ts.origin[0]) / (ts.tileWidth * r));
      var y = Math.floor((p.y - ts.origin[1]) / (ts.tileHeight * r));
      cursor.textContent = z + '/' + x + '/' + y + '  (' + p.x.toFixed(2) + ', ' + p.y.toFixed(2) + ')';
    });
  }

  fetch('index.json', { cache: 'no-cache' }).then(function (r) {
    if (!r.ok) throw new Error('index.json: HTTP ' + r.status);
    return r.json();
  }).then(function (idx) {
    sets = idx.tileSets || [];
    select.textContent = '';
    if (sets.length === 0) {
      select.appendChild(new Option('no tile sets yet: seed a layer'));
      return;
    }
    sets.forEach(function (ts, i) { select.appendChild(new Option(label(ts), String(i))); });
    select.disabled = false;
    var h = hash(), i = Math.max(0, Math.min(sets.length - 1, parseInt(h.set || '0', 10) || 0));
    select.value = String(i);
    select.addEventListener('change', function () { show(+select.value, {}); });
    sourceSelect.addEventListener('change', function () { show(+select.value, { source: sourceSelect.value }); });
    window.addEventListener('hashchange', function () {
      var h = hash(), j = parseInt(h.set || '0', 10) || 0;
      select.value = String(j);
      show(j, h);
    });
    show(i, h);
  }).catch(function (err) {
    select.textContent = '';
    select.appendChild(new Option('no tile sets yet (' + err.message + ')'));
  });
})();
