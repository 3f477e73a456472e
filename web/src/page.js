// The demo map page: lists the tile sets of index.json (written beside the
// tiles) and shows one on a Leaflet map. Every grid is described to Leaflet
// by the index alone: resolutions per level and the bottom-left origin of
// tile (0, 0); tile rows are counted from the bottom, as in the keys.
// URL hash: #set=N&z=Z&lat=..&lon=..&source=S selects a tile set, a
// level, a centre and how tiles are asked for: S is tms (the stored keys,
// the default), xyz (the CDN's /xyz/ paths, rows counted from the top) or
// wmts (the ResourceURL of the layer's WMTS capabilities, rows from the
// top). <body data-ready="N"> is set once tile set N's tiles loaded.
// A vector tile set (Mapbox Vector Tiles) is drawn by MapLibre GL instead,
// from its TileJSON (tms: tilejson.json, rows from the bottom; xyz:
// tilejson-xyz.json; wmts: the capabilities' ResourceURL), with a style
// made from TileJSON's vector_layers: each source layer in a colour of its
// own, its polygons filled, its lines stroked and its points as circles;
// <body data-renderer> says which library draws the tile set shown.
(function () {
  'use strict';
  var select = document.getElementById('tileset');
  var sourceSelect = document.getElementById('source');
  var info = document.getElementById('info');
  var cursor = document.getElementById('cursor');
  var base = location.href.replace(/[#?].*$/, '').replace(/[^/]*$/, '');
  var transparent = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAAC0lEQVR4nGNgAAIAAAUAAXpeqz8AAAAASUVORK5CYII=';
  var map = null, layer = null, vmap = null, sets = [], shownAt = 0;
  var mvt = 'application/vnd.mapbox-vector-tile';
  // palette: one colour per source layer of a vector tile set.
  var palette = ['#d7263d', '#1b998b', '#2e5eaa', '#f49d37', '#7b2d8b', '#3f88c5', '#8a6f30', '#e84393'];
  var background = '#f4f1ea';

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

  // freshContainer removes the map shown (Leaflet's or MapLibre's) and
  // puts an untouched #map element in its place.
  function freshContainer() {
    if (map) { map.remove(); map = null; }
    if (vmap) { vmap.remove(); vmap = null; }
    var old = document.getElementById('map'), el = old.cloneNode(false);
    el.className = '';
    old.parentNode.replaceChild(el, old);
    return el;
  }

  // absolute makes a URL of a document (root-relative or relative to the
  // page) absolute, keeping {z}/{x}/{y} as they are: MapLibre's workers
  // fetch tiles from a blob: URL, against which nothing is relative.
  function absolute(u) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(u)) return u;
    if (u.charAt(0) === '/') return location.protocol + '//' + location.host + u;
    return rel(u);
  }

  // maplibre evaluates MapLibre GL (once) from its inert text in the page
  // (a script of a blob: URL); it makes its workers of itself.
  var maplibrePromise = null;
  function maplibre() {
    if (!maplibrePromise) {
      maplibrePromise = new Promise(function (resolve, reject) {
        var url = URL.createObjectURL(new Blob([document.getElementById('maplibre-js').textContent], { type: 'text/javascript' }));
        var s = document.createElement('script');
        s.src = url;
        s.onload = function () { URL.revokeObjectURL(url); resolve(window.maplibregl); };
        s.onerror = function () { reject(new Error('MapLibre GL did not load')); };
        document.head.appendChild(s);
      });
    }
    return maplibrePromise;
  }

  // vectorStyle is a MapLibre style of a TileJSON's vector_layers: per
  // source layer one colour, a fill of its polygons, a line of its lines
  // and a circle per point, over a plain background.
  function vectorStyle(tj, tiles, scheme) {
    var is = function (types) { return ['match', ['geometry-type'], types, true, false]; };
    var layers = [{ id: 'background', type: 'background', paint: { 'background-color': background } }];
    (tj.vector_layers || []).forEach(function (vl, n) {
      var c = palette[n % palette.length], common = { source: 'tiles', 'source-layer': vl.id };
      layers.push(L.extend({ id: vl.id + ' fill', type: 'fill', filter: is(['Polygon', 'MultiPolygon']),
        paint: { 'fill-color': c, 'fill-opacity': 0.3, 'fill-outline-color': c } }, common));
      layers.push(L.extend({ id: vl.id + ' line', type: 'line', filter: is(['LineString', 'MultiLineString']),
        paint: { 'line-color': c, 'line-width': 2 } }, common));
      layers.push(L.extend({ id: vl.id + ' point', type: 'circle', filter: is(['Point', 'MultiPoint']),
        paint: { 'circle-color': c, 'circle-radius': 4 } }, common));
    });
    var src = { type: 'vector', tiles: tiles, scheme: scheme, minzoom: tj.minzoom, maxzoom: tj.maxzoom };
    if (tj.bounds) src.bounds = tj.bounds;
    if (tj.attribution) src.attribution = tj.attribution.replace(/[<>&]/g, '');
    return { version: 8, sources: { tiles: src }, layers: layers };
  }

  // showVector draws vector tile set i with MapLibre GL, which draws a
  // vector tile 512 pixels wide whatever the grid's tile size: level z of
  // the tile set is MapLibre's zoom z.
  function showVector(i, h, source, ts, el) {
    var doc = source === 'tms' ? ts.tileJSON : ts.tileJSONXYZ, at = shownAt;
    document.body.setAttribute('data-renderer', 'maplibre');
    if (!doc) {
      info.textContent = 'no TileJSON for this tile set: MapLibre GL draws Web Mercator tile sets only';
      return;
    }
    var tileJSON = fetch(rel(doc), { cache: 'no-cache' }).then(function (r) {
      if (!r.ok) throw new Error(doc + ': HTTP ' + r.status);
      return r.json();
    });
    Promise.all([tileJSON, source === 'wmts' ? wmtsTemplate(ts) : null, maplibre()]).then(function (got) {
      if (at !== shownAt) return; // another tile set or source was chosen meanwhile
      var tj = got[0], ml = got[2];
      var tiles = (got[1] ? [got[1]] : tj.tiles).map(absolute);
      var scheme = source === 'tms' ? 'tms' : 'xyz';
      var opts = { container: el, style: vectorStyle(tj, tiles, scheme), renderWorldCopies: false, fadeDuration: 0,
        minZoom: 0, maxZoom: ts.maxZoom + 1, canvasContextAttributes: { preserveDrawingBuffer: true } };
      if (h.z !== undefined) {
        opts.zoom = +h.z;
        opts.center = h.lat !== undefined && h.lon !== undefined ? [+h.lon, +h.lat] : [tj.center[0], tj.center[1]];
      } else {
        opts.bounds = tj.bounds;
      }
      vmap = new ml.Map(opts);
      var shown = vmap;
      vmap.once('idle', function () { if (vmap === shown) document.body.setAttribute('data-ready', String(i)); });
      vmap.on('error', function (e) {
        info.textContent = 'MapLibre GL: ' + (e.error && e.error.message || e.error);
        console.error(e.error);
      });
      vmap.on('mousemove', function (e) {
        cursor.textContent = 'lon ' + e.lngLat.lng.toFixed(4) + ', lat ' + e.lngLat.lat.toFixed(4) +
          '  (level ' + Math.min(ts.maxZoom, Math.floor(vmap.getZoom())) + ')';
      });
      info.textContent = '';
      var names = (tj.vector_layers || []).map(function (vl) { return vl.id; });
      info.appendChild(document.createTextNode(names.length ? 'vector layers: ' : 'TileJSON lists no vector_layers yet: seed the tile set'));
      names.forEach(function (name, n) {
        var s = document.createElement('span');
        s.textContent = '\u25a0 ' + name + '  ';
        s.style.color = palette[n % palette.length];
        info.appendChild(s);
      });
      var a = document.createElement('a');
      a.href = rel(doc);
      a.textContent = 'TileJSON';
      info.appendChild(a);
    }).catch(function (err) {
      info.textContent = 'cannot show the ' + source + ' source: ' + err.message;
      console.error(err);
    });
  }

  function show(i, h) {
    var ts = sets[i];
    var source = ['tms', 'xyz', 'wmts'].indexOf(h.source) >= 0 ? h.source : sourceSelect.value;
    sourceSelect.value = source;
    document.body.removeAttribute('data-ready');
    shownAt++;
    var el = freshContainer();
    if (ts.format === mvt) {
      showVector(i, h, source, ts, el);
      return;
    }
    document.body.setAttribute('data-renderer', 'leaflet');
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
