/* commsched HTML report: hover, zoom and sorting. Embedded into the page by
   src/report_html_embed.cmake. Framework-free, no network.

   The page arrives fully drawn: src/report_html.c writes the first view
   (every node a bar on small graphs, per-pixel bins plus the wide nodes on
   big ones) so it reads without JavaScript. This script adds
   - a tooltip for every bar, stall and bin (name, kind, op, bytes, times;
     counts for bins), looked up in the JSON data block by data-node;
   - zoom (drag across the timeline, Ctrl+wheel, buttons) and pan
     (Shift+wheel, buttons): the zoomed view is redrawn from the data with
     the same rule as the first view, bars while a lane shows at most
     BAR_LIMIT nodes, pixel bins and wide bars beyond; the memory chart
     follows the same window;
   - sorting of the collectives table by any column.
   No comment uses two slashes: the page must not contain anything that
   looks like a URL. */
(function () {
  'use strict';
  var dataEl = document.getElementById('cs-data');
  if (!dataEl) { return; }
  var D = JSON.parse(dataEl.textContent);
  var tl = document.getElementById('cs-tl');
  var NS = tl ? tl.namespaceURI : null;
  var BAR_LIMIT = 2000, MIN_PX = 3;
  var L = D.L, W = D.W, T = D.T > 0 ? D.T : 1;
  var view = { t0: 0, t1: T };

  /* ---- formatting ---- */
  function fmtTime(ns) {
    var a = Math.abs(ns);
    if (a >= 1e9) { return (ns / 1e9).toFixed(3) + ' s'; }
    if (a >= 1e6) { return (ns / 1e6).toFixed(3) + ' ms'; }
    if (a >= 1e3) { return (ns / 1e3).toFixed(1) + ' \u00b5s'; }
    return ns.toFixed(0) + ' ns';
  }
  /* Axis labels: as short as the step allows (the C side's fmt_tick). */
  function fmtTick(ns, step) {
    var unit = 'ns', div = 1;
    if (step >= 1e8 || ns >= 1e9) { unit = 's'; div = 1e9; } else if (step >= 1e5 || ns >= 1e6) { unit = 'ms'; div = 1e6; } else if (step >= 1e2 || ns >= 1e3) { unit = '\u00b5s'; div = 1e3; }
    if (ns === 0) { return '0'; }
    var s = step / div, dec = s >= 1 ? 0 : s >= 0.1 ? 1 : s >= 0.01 ? 2 : 3;
    return (ns / div).toFixed(dec) + ' ' + unit;
  }
  function fmtBytes(b) {
    var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0, v = Math.abs(b);
    while (v >= 1024 && i < 4) { v /= 1024; i++; }
    if (b < 0) { v = -v; }
    return i === 0 ? v.toFixed(0) + ' B' : v.toFixed(2) + ' ' + u[i];
  }
  var KIND = { c: 'compute', a: 'collective', s: 'sync collective', w: 'wait' };

  /* ---- data lookups ---- */
  var runs = {};
  D.runs.forEach(function (r) {
    var g = D.graphs[r.g];
    r.graph = g;
    if (!g.index) {
      g.index = {};
      if (g.sel) { for (var k = 0; k < g.sel.length; k++) { g.index[g.sel[k]] = k; } }
    }
    runs[r.key] = r;
    r.e = r.s.map(function (st, j) { return st + r.d[j]; });
    /* Per-lane entries in drawing order: j >= 0 is node slot j on its own
       lane, -(j+1) a sync collective's twin on the compute lane. */
    r.lists = r.lanes.map(function () { return []; });
    for (var j = 0; j < r.lane.length; j++) {
      if (r.lane[j] < 0) { continue; }
      r.lists[r.lane[j]].push(j);
      if (g.kind.charAt(j) === 's' && r.lanes.length > 0) { r.lists[0].push(-(j + 1)); }
    }
  });
  function slot(g, v) { return g.sel ? g.index[v] : v; }

  /* The interval a node occupies on a lane, its class, and its overlays. */
  function shape(r, e) {
    var twin = e < 0, j = twin ? -e - 1 : e, g = r.graph;
    var k = g.kind.charAt(j), s = r.s[j], en = r.e[j], q = s - r.q[j], x = r.x[j];
    var o = { j: j, a: s, b: en, cls: 'bar c', st: null, ex: null, qu: null };
    if (twin) { o.a = q; o.cls = 'st'; o.st = null; return o; }
    if (k === 'w') {
      o.a = q; o.cls = 'bar w';
      if (x > 0) { o.st = [q, Math.min(en, q + x)]; }
    } else if (k === 'a' || k === 's') {
      o.cls = 'bar ' + (g.opc[g.op[j]] || 'co');
      if (x > 0) { o.ex = [Math.max(s, en - x), en]; }
      if (q < s) { o.qu = [q, s]; }
    }
    if (o.b <= o.a) { o.cls += ' z'; }
    return o;
  }

  /* ---- SVG helpers ---- */
  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) { if (Object.prototype.hasOwnProperty.call(attrs, k)) { e.setAttribute(k, attrs[k]); } }
    if (parent) { parent.appendChild(e); }
    return e;
  }
  function X(t) { return L + (t - view.t0) / (view.t1 - view.t0) * W; }
  function clip(x) { return Math.max(L - 2, Math.min(L + W + 2, x)); }
  function niceStep(span) {
    var raw = span / 8, mag = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / mag;
    return mag * (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10);
  }
  function axis(g, top, bottom, labelY) {
    var span = view.t1 - view.t0, step = niceStep(span);
    for (var t = Math.ceil(view.t0 / step) * step; t <= view.t1 + step * 1e-9; t += step) {
      var x = X(t).toFixed(1);
      el('line', { 'class': 'grid', x1: x, x2: x, y1: top, y2: bottom }, g);
      var lbl = el('text', { x: x, y: labelY, 'text-anchor': 'middle' }, g);
      lbl.textContent = fmtTick(t, step);
    }
  }

  /* ---- the timeline at the current window ---- */
  function drawLane(g, r, li) {
    var lane = r.lanes[li], list = r.lists[li], y = lane.y, h = D.laneH;
    var vis = [];
    for (var i = 0; i < list.length; i++) {
      var o = shape(r, list[i]);
      if (o.b >= view.t0 && o.a <= view.t1) { vis.push(o); }
    }
    if (r.bins) { drawBins(g, r, li); }
    var many = vis.length > BAR_LIMIT, cols = null, scale = W / (view.t1 - view.t0);
    if (many) { cols = { busy: new Float64Array(W), exp: new Float64Array(W), n: new Uint32Array(W) }; }
    for (var k = 0; k < vis.length; k++) {
      var b = vis[k], x0 = clip(X(b.a)), x1 = clip(X(b.b));
      if (many && x1 - x0 < MIN_PX) {
        addCols(cols, b.a, b.b, 0);
        if (b.st) { addCols(cols, b.st[0], b.st[1], 1); }
        if (b.ex) { addCols(cols, b.ex[0], b.ex[1], 1); }
        if (b.cls === 'st') { addCols(cols, b.a, b.b, 1); }
        cols.n[Math.max(0, Math.min(W - 1, Math.floor(X((b.a + b.b) / 2) - L)))]++;
        continue;
      }
      var w = Math.max(x1 - x0, b.cls === 'st' ? 0 : 1);
      el('rect', { 'class': b.cls, x: x0.toFixed(2), y: y, width: w.toFixed(2), height: h,
        'data-run': r.key, 'data-node': r.graph.sel ? r.graph.sel[b.j] : b.j }, g);
      if (b.qu) {
        el('line', { 'class': 'qu', x1: clip(X(b.qu[0])).toFixed(2), x2: clip(X(b.qu[1])).toFixed(2),
          y1: y + h / 2, y2: y + h / 2 }, g);
      }
      var ov = b.st || b.ex;
      if (ov) {
        var ox0 = clip(X(ov[0])), ox1 = clip(X(ov[1]));
        el('rect', { 'class': b.st ? 'st' : 'ex', x: ox0.toFixed(2), y: b.st ? y : y, width: Math.max(ox1 - ox0, 1).toFixed(2),
          height: b.st ? h : 5, 'data-run': r.key, 'data-node': r.graph.sel ? r.graph.sel[b.j] : b.j }, g);
      }
    }
    if (many) { emitCols(g, cols, r, li, lane, scale); }
  }
  function addCols(cols, a, b, which) {
    var x0 = Math.max(0, X(a) - L), x1 = Math.min(W, X(b) - L);
    if (x1 <= x0) { return; }
    for (var c = Math.floor(x0); c < x1 && c < W; c++) {
      var lo = Math.max(x0, c), hi = Math.min(x1, c + 1);
      if (hi > lo) { (which ? cols.exp : cols.busy)[c] += hi - lo; }
    }
  }
  function emitCols(g, cols, r, li, lane, scale) {
    var h = D.laneH, c = 0;
    while (c < W) {
      var lev = Math.round(Math.min(1, cols.busy[c]) * 20);
      if (lev === 0) { c++; continue; }
      var c1 = c + 1, n = cols.n[c], busy = cols.busy[c];
      while (c1 < W && Math.round(Math.min(1, cols.busy[c1]) * 20) === lev) { n += cols.n[c1]; busy += cols.busy[c1]; c1++; }
      var hh = h * lev / 20;
      el('rect', { 'class': 'bn ' + (li === 0 ? 'c' : 'k'), x: L + c, y: (lane.y + h - hh).toFixed(2), width: c1 - c,
        height: hh.toFixed(2), 'data-run': r.key, 'data-lane': li, 'data-n': n,
        'data-t0': view.t0 + c / scale, 'data-t1': view.t0 + c1 / scale, 'data-busy': Math.round(1000 * busy / (c1 - c)) }, g);
      c = c1;
    }
    c = 0;
    while (c < W) {
      if (cols.exp[c] <= 0) { c++; continue; }
      var e1 = c + 1, ex = cols.exp[c];
      while (e1 < W && cols.exp[e1] > 0) { ex += cols.exp[e1]; e1++; }
      el('rect', { 'class': 'ex', x: L + c, y: lane.y, width: e1 - c, height: 4, 'data-run': r.key,
        'data-lane': li, 'data-exp': ex / scale }, g);
      c = e1;
    }
  }
  /* Bins the page was written with (runs too large to send every node):
     the background under the wide nodes that were sent. */
  function drawBins(g, r, li) {
    var B = r.bins.B, busy = r.bins.busy[li], h = D.laneH, lane = r.lanes[li];
    var w = T / B;
    for (var i = 0; i < B; i++) {
      if (!busy[i]) { continue; }
      var a = i * w, b = a + w;
      if (b < view.t0 || a > view.t1) { continue; }
      var x0 = clip(X(a)), x1 = clip(X(b)), hh = h * Math.min(1, busy[i] / 1000);
      el('rect', { 'class': 'bn ' + (li === 0 ? 'c' : 'k'), x: x0.toFixed(2), y: (lane.y + h - hh).toFixed(2),
        width: Math.max(x1 - x0, 0.5).toFixed(2), height: hh.toFixed(2), 'data-run': r.key, 'data-lane': li,
        'data-n': r.bins.cnt[li][i], 'data-t0': a, 'data-t1': b, 'data-busy': busy[i] }, g);
    }
  }

  /* ---- memory at the current window ---- */
  function drawMemory(g) {
    var M = D.mem;
    if (!M) { return; }
    function Y(b) { return M.y0 + M.h - (b / M.max) * M.h; }
    D.runs.forEach(function (r) {
      if (!r.mem) { return; }
      var t = r.mem.t, b = r.mem.b, lo = 0, hi = t.length;
      while (lo < hi) { var mid = (lo + hi) >> 1; if (t[mid] <= view.t0) { lo = mid + 1; } else { hi = mid; } }
      var i = Math.max(0, lo - 1), cur = b[i];
      var d = 'M' + L + ' ' + Y(cur).toFixed(1), col = -1, mn = 0, mx = 0, last = 0;
      function flush() {
        if (col < 0) { return; }
        d += ' H' + (L + col / 2).toFixed(1) + ' V' + Y(mx).toFixed(1);
        if (mn !== mx) { d += ' V' + Y(mn).toFixed(1); }
        if (last !== mn) { d += ' V' + Y(last).toFixed(1); }
      }
      for (i = i + 1; i < t.length && t[i] <= view.t1; i++) {
        var c = Math.floor((X(t[i]) - L) * 2);
        if (c !== col) { flush(); col = c; mn = mx = last = b[i]; } else { mn = Math.min(mn, b[i]); mx = Math.max(mx, b[i]); last = b[i]; }
      }
      flush();
      d += ' H' + clip(X(Math.min(view.t1, r.end))).toFixed(1);
      el('path', { 'class': 'mline ' + r.key, d: d }, g);
      if (r.peakAt >= view.t0 && r.peakAt <= view.t1) {
        el('circle', { 'class': 'mdot ' + r.key, cx: X(r.peakAt).toFixed(1), cy: Y(r.peak).toFixed(1), r: 3.5,
          'data-peak': r.peak, 'data-run': r.key, 'data-t0': r.peakAt }, g);
      }
    });
    axis(g, M.y0, M.y0 + M.h, M.y0 + M.h + 16);
  }

  /* ---- view switching ---- */
  var label = document.getElementById('cs-window');
  function render() {
    var full = view.t0 <= 0 && view.t1 >= T;
    ['cs-tl', 'cs-mem'].forEach(function (id) {
      var svg = document.getElementById(id);
      if (!svg) { return; }
      var st = svg.querySelector('.static'), dyn = svg.querySelector('.dyn');
      while (dyn.firstChild) { dyn.removeChild(dyn.firstChild); }
      st.style.display = full ? '' : 'none';
      if (full) { return; }
      if (id === 'cs-tl') {
        axis(dyn, D.axisY, D.axisBottom, D.axisY - 7);
        D.runs.forEach(function (r) { for (var li = 0; li < r.lanes.length; li++) { drawLane(dyn, r, li); } });
      } else {
        drawMemory(dyn);
      }
    });
    if (label) { label.textContent = fmtTime(view.t0) + ' \u2013 ' + fmtTime(view.t1) + (full ? ' (whole step)' : ''); }
  }
  function setView(t0, t1) {
    var minSpan = Math.max(T * 1e-7, 1);
    if (t1 - t0 < minSpan) { var m = (t0 + t1) / 2; t0 = m - minSpan / 2; t1 = m + minSpan / 2; }
    if (t1 - t0 >= T) { t0 = 0; t1 = T; }
    if (t0 < 0) { t1 -= t0; t0 = 0; }
    if (t1 > T) { t0 -= t1 - T; t1 = T; }
    view.t0 = Math.max(0, t0); view.t1 = Math.min(T, t1);
    render();
    /* The window goes into the address (#view=t0,t1 in ns) so a zoomed
       view can be shared; replaceState adds no history entries. */
    if (window.history && history.replaceState) {
      try {
        var full = view.t0 <= 0 && view.t1 >= T;
        history.replaceState(null, '', full ? location.pathname + location.search :
          '#view=' + Math.round(view.t0) + ',' + Math.round(view.t1));
      } catch (e) { /* some file: contexts refuse; the view still works */ }
    }
  }
  function zoom(f, at) {
    var c = at === undefined ? (view.t0 + view.t1) / 2 : at;
    setView(c - (c - view.t0) * f, c + (view.t1 - c) * f);
  }
  function pan(f) { var s = (view.t1 - view.t0) * f; setView(view.t0 + s, view.t1 + s); }
  var actions = { 'zoom-in': function () { zoom(0.5); }, 'zoom-out': function () { zoom(2); },
    'left': function () { pan(-0.25); }, 'right': function () { pan(0.25); }, 'reset': function () { setView(0, T); } };
  Array.prototype.forEach.call(document.querySelectorAll('button[data-act]'), function (b) {
    b.addEventListener('click', function () { actions[b.getAttribute('data-act')](); });
  });

  function svgX(svg, ev) {
    var rc = svg.getBoundingClientRect();
    return (ev.clientX - rc.left) * (svg.viewBox.baseVal.width / rc.width);
  }
  function timeAt(x) { return view.t0 + (x - L) / W * (view.t1 - view.t0); }
  if (tl) {
    var brush = tl.querySelector('.brush'), drag = null;
    tl.addEventListener('mousedown', function (ev) {
      var x = svgX(tl, ev);
      if (x < L || x > L + W || ev.button !== 0) { return; }
      drag = x; brush.setAttribute('x', x); brush.setAttribute('width', 0); brush.style.display = '';
      ev.preventDefault();
    });
    window.addEventListener('mousemove', function (ev) {
      if (drag === null) { return; }
      var x = Math.max(L, Math.min(L + W, svgX(tl, ev)));
      brush.setAttribute('x', Math.min(x, drag)); brush.setAttribute('width', Math.abs(x - drag));
    });
    window.addEventListener('mouseup', function (ev) {
      if (drag === null) { return; }
      var x = Math.max(L, Math.min(L + W, svgX(tl, ev))), a = Math.min(x, drag), b = Math.max(x, drag);
      drag = null; brush.style.display = 'none';
      if (b - a > 3) { setView(timeAt(a), timeAt(b)); }
    });
    tl.addEventListener('dblclick', function () { setView(0, T); });
    tl.addEventListener('wheel', function (ev) {
      if (!ev.ctrlKey && !ev.shiftKey) { return; }
      ev.preventDefault();
      var dy = ev.deltaY || ev.deltaX;
      if (ev.ctrlKey) { zoom(dy > 0 ? 1.25 : 0.8, timeAt(svgX(tl, ev))); } else { pan(dy > 0 ? 0.1 : -0.1); }
    }, { passive: false });
  }

  /* ---- tooltip ---- */
  var tip = document.getElementById('cs-tip');
  function line(parent, k, v) {
    var d = document.createElement('div'), s = document.createElement('span');
    s.className = 'k'; s.textContent = k + ': '; d.appendChild(s);
    d.appendChild(document.createTextNode(v)); parent.appendChild(d);
  }
  function nodeTip(r, v) {
    var g = r.graph, j = slot(g, v);
    if (j === undefined) { return false; }
    var k = g.kind.charAt(j), s = r.s[j], e = r.e[j], q = s - r.q[j], x = r.x[j];
    var h = document.createElement('b'); h.textContent = g.name[j]; tip.appendChild(h);
    line(tip, 'kind', KIND[k] + (g.op[j] >= 0 ? ' \u00b7 ' + g.ops[g.op[j]] : ''));
    if (g.bytes[j] > 0) { line(tip, 'bytes', fmtBytes(g.bytes[j])); }
    if (q < s) { line(tip, k === 'w' ? 'issued' : 'issued (queued)', fmtTime(q)); }
    line(tip, 'start', fmtTime(s));
    line(tip, 'end', fmtTime(e));
    line(tip, 'runtime', fmtTime(e - s));
    if (k === 'w') { line(tip, 'stall', fmtTime(x)); } else if (k !== 'c') { line(tip, 'exposed', fmtTime(x)); }
    line(tip, 'run', r.label);
    return true;
  }
  function binTip(t) {
    var a = t.getAttribute.bind(t), r = runs[a('data-run')];
    var h = document.createElement('b');
    if (a('data-peak')) {
      h.textContent = 'peak memory (' + r.label + ')'; tip.appendChild(h);
      line(tip, 'bytes', fmtBytes(+a('data-peak'))); line(tip, 'at', fmtTime(+a('data-t0')));
      return true;
    }
    var lane = r ? r.lanes[+a('data-lane')] : null;
    if (a('data-exp') && !a('data-n')) {
      h.textContent = 'exposed'; tip.appendChild(h);
      line(tip, 'time', fmtTime(+a('data-exp')));
    } else {
      h.textContent = a('data-n') + (a('data-n') === '1' ? ' node' : ' nodes') + ' (aggregated)'; tip.appendChild(h);
      line(tip, 'from', fmtTime(+a('data-t0'))); line(tip, 'to', fmtTime(+a('data-t1')));
      line(tip, 'busy', (a('data-busy') / 10).toFixed(1) + '%');
      if (a('data-exp')) { line(tip, 'exposed', fmtTime(+a('data-exp'))); }
      line(tip, 'zoom in', 'to see each node');
    }
    if (lane) { line(tip, 'lane', r.label + ' \u00b7 ' + lane.name); }
    return true;
  }
  document.addEventListener('mousemove', function (ev) {
    if (!tip) { return; }
    var t = ev.target, ok = false;
    if (t && t.getAttribute && (t.getAttribute('data-run'))) {
      while (tip.firstChild) { tip.removeChild(tip.firstChild); }
      if (t.getAttribute('data-node') !== null) { ok = nodeTip(runs[t.getAttribute('data-run')], +t.getAttribute('data-node')); } else { ok = binTip(t); }
    }
    if (!ok) { tip.style.display = 'none'; return; }
    tip.style.display = 'block';
    var x = ev.clientX + 14, y = ev.clientY + 14;
    if (x + tip.offsetWidth > window.innerWidth - 8) { x = ev.clientX - tip.offsetWidth - 10; }
    if (y + tip.offsetHeight > window.innerHeight - 8) { y = ev.clientY - tip.offsetHeight - 10; }
    tip.style.left = x + 'px'; tip.style.top = y + 'px';
  });

  /* ---- sortable tables ---- */
  Array.prototype.forEach.call(document.querySelectorAll('table.sortable'), function (tab) {
    var heads = tab.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, col) {
      th.addEventListener('click', function () {
        var desc = th.getAttribute('aria-sort') !== 'descending';
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute('aria-sort'); });
        th.setAttribute('aria-sort', desc ? 'descending' : 'ascending');
        var body = tab.tBodies[0], rows = Array.prototype.slice.call(body.rows);
        /* Numbers sort by data-v; text by its content; empty cells last. */
        function key(row) {
          var c = row.cells[col], v = c.getAttribute('data-v');
          if (v === null) { return { s: c.textContent }; }
          if (v === '') { return { e: 1 }; }
          return { n: +v };
        }
        rows.sort(function (a, b) {
          var ka = key(a), kb = key(b), r;
          if (ka.e || kb.e) { return (ka.e || 0) - (kb.e || 0); }
          if (ka.n !== undefined && kb.n !== undefined) { r = ka.n - kb.n; } else { r = String(ka.s).localeCompare(String(kb.s)); }
          return desc ? -r : r;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  });
  var m = /^#view=([0-9.e+]+),([0-9.e+]+)$/.exec(location.hash);
  if (m && +m[2] > +m[1]) { setView(+m[1], +m[2]); } else { render(); }
  document.documentElement.setAttribute('data-ready', '1');
}());
