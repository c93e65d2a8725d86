/* harness view: one hand-written page, no build step, no network beyond its own server (or files).
   Every string from a results folder is untrusted: it reaches the page through textContent,
   createTextNode and attribute values only, never parsed as HTML. */
(function () {
  'use strict';
  var BUNDLE = window.HV_BUNDLE || null;
  var ROW = 24;
  var RUN_ID = /^r\d+(-\d+)?$/;
  var store = new Map();
  var waiting = new Map();
  var app = document.getElementById('app');
  var crumbs = document.getElementById('crumbs');

  window.HV = Object.freeze({
    put: function (key, data) {
      store.set(key, data);
      var w = waiting.get(key);
      if (w) { waiting.delete(key); w.forEach(function (f) { f(data); }); }
    }
  });

  // -- building elements (text only) -------------------------------------------------------
  function h(tag, attrs) {
    var el = document.createElement(tag);
    setAttrs(el, attrs);
    for (var i = 2; i < arguments.length; i++) add(el, arguments[i]);
    return el;
  }
  function setAttrs(el, attrs) {
    Object.keys(attrs || {}).forEach(function (k) {
      var v = attrs[k];
      if (v === null || v === undefined || v === false) return;
      if (k === 'class') el.setAttribute('class', v);
      else if (k === 'text') el.textContent = String(v);
      else if (k === 'dataset') Object.keys(v).forEach(function (d) { el.dataset[d] = String(v[d]); });
      else if (k.slice(0, 2) === 'on') el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, String(v));
    });
  }
  function add(el, c) {
    if (c === null || c === undefined || c === false) return;
    if (Array.isArray(c)) { c.forEach(function (x) { add(el, x); }); return; }
    el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  function svg(tag, attrs) {
    var el = document.createElementNS('http://www.w3.org/2000/svg', tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k.slice(0, 2) === 'on') el.addEventListener(k.slice(2), attrs[k]);
      else if (k === 'dataset') Object.keys(attrs[k]).forEach(function (d) { el.dataset[d] = String(attrs[k][d]); });
      else el.setAttribute(k, String(attrs[k]));
    });
    return el;
  }
  function hash(parts) { return '#/' + parts.map(function (p) { return encodeURIComponent(String(p)); }).join('/'); }
  function link(parts, text, attrs) { return h('a', Object.assign({ href: hash(parts) }, attrs || {}), text); }
  function num(v, d) { return (typeof v === 'number' && isFinite(v)) ? v.toFixed(d === undefined ? 4 : d) : '–'; }
  function pval(v) { return typeof v !== 'number' ? '–' : (v < 1e-4 ? '<0.0001' : v.toFixed(4)); }
  function show() {
    app.textContent = '';
    for (var i = 0; i < arguments.length; i++) add(app, arguments[i]);
  }
  function setCrumbs(items) {
    crumbs.textContent = '';
    items.forEach(function (it) { add(crumbs, [' › ', it]); });
  }
  function fail(err) { show(h('p', { class: 'error', id: 'error' }, String(err && err.message || err))); }

  // -- data: the server's JSON, or the bundle's .js files --------------------------------------
  function bundleFile(key) {
    var p = key.split('/');
    if (p[0] === 'runs') return Promise.resolve('data/runs.js');
    if (!RUN_ID.test(p[1] || '')) return Promise.reject(new Error('not found'));
    if (p[0] === 'run') return Promise.resolve('data/run/' + p[1] + '.js');
    if (p[0] === 'compare') {
      var ids = p.slice(1);
      if (!ids.every(function (x) { return RUN_ID.test(x); }) || BUNDLE.compare.indexOf(ids.join('/')) < 0) {
        return Promise.reject(new Error('this bundle holds no comparison of ' + ids.join(' and ') +
          ' (a bundle holds the comparisons of two runs of one task)'));
      }
      return Promise.resolve('data/compare/' + ids.join('_') + '.js');
    }
    if (p[0] === 'query') {
      var qid = p.slice(2).join('/');
      return load('run/' + p[1]).then(function (run) {
        var i = run.per_query ? run.per_query.qids.indexOf(qid) : -1;
        if (i < 0) throw new Error('query ' + qid + ' is not in run ' + p[1]);
        return 'data/q/' + p[1] + '/' + Math.floor(i / BUNDLE.chunk) + '.js';
      });
    }
    return Promise.reject(new Error('not found'));
  }
  function load(key) {
    if (store.has(key)) return Promise.resolve(store.get(key));
    if (!BUNDLE) {
      var url = 'api/' + key.split('/').map(encodeURIComponent).join('/') + '.json';
      if (key.indexOf('query/') === 0) {
        var p = key.split('/');
        url = 'api/query/' + encodeURIComponent(p[1]) + '/' + encodeURIComponent(p.slice(2).join('/')) + '.json';
      }
      return fetch(url).then(function (r) {
        return r.json().then(function (d) {
          if (!r.ok) throw new Error(d && d.error || ('HTTP ' + r.status));
          store.set(key, d);
          return d;
        });
      });
    }
    return bundleFile(key).then(function (file) {
      return new Promise(function (resolve, reject) {
        if (store.has(key)) return resolve(store.get(key));
        if (!waiting.has(key)) waiting.set(key, []);
        waiting.get(key).push(resolve);
        var s = document.createElement('script');
        s.src = file;
        s.onload = function () {
          if (!store.has(key)) { waiting.delete(key); reject(new Error('not found in the bundle: ' + key)); }
        };
        s.onerror = function () { waiting.delete(key); reject(new Error('cannot load ' + file)); };
        document.head.appendChild(s);
      });
    });
  }

  // -- a sortable table (small) and a virtual one (large) ---------------------------------------
  function sortRows(rows, key, dir) {
    return rows.slice().sort(function (a, b) {
      var x = a[key], y = b[key];
      var xn = x === null || x === undefined, yn = y === null || y === undefined;
      if (xn || yn) return xn === yn ? 0 : (xn ? 1 : -1);
      if (typeof x === 'number' && typeof y === 'number') return dir * (x - y);
      return dir * String(x).localeCompare(String(y));
    });
  }

  function virtualTable(cols, rowCount, cell, onRow, onSort) {
    var grid = cols.map(function (c) { return c.width || 'minmax(6em, 1fr)'; }).join(' ');
    var head = h('div', { class: 'vhead', role: 'row' });
    head.style.gridTemplateColumns = grid;
    cols.forEach(function (c, i) {
      add(head, h('span', { role: 'columnheader', dataset: { col: c.key }, class: c.cls || null,
        onclick: function () { onSort(i); } }, c.label));
    });
    var body = h('div', { class: 'vbody', role: 'rowgroup' });
    var space = h('div', { class: 'vspace' });
    body.appendChild(space);
    var n = rowCount;
    var pending = false;
    var pool = [];  // row elements, reused: a scroll only rewrites their text
    function newRow() {
      var row = h('div', { class: 'vrow', role: 'row' });
      row.style.gridTemplateColumns = grid;
      cols.forEach(function (c) { row.appendChild(h('span', { class: c.num ? 'num' : null, role: 'cell' })); });
      row.addEventListener('click', function () { onRow(Number(row.dataset.index)); });
      space.appendChild(row);
      pool.push(row);
    }
    function render() {
      pending = false;
      space.style.height = (n * ROW) + 'px';
      var first = Math.max(0, Math.floor(body.scrollTop / ROW) - 5);
      var last = Math.min(n, first + Math.ceil((body.clientHeight || 480) / ROW) + 10);
      while (pool.length < last - first) newRow();
      for (var i = 0; i < pool.length; i++) {
        var row = pool[i], r = first + i;
        if (r >= last) { row.hidden = true; continue; }
        row.hidden = false;
        row.dataset.index = r;
        row.style.top = (r * ROW) + 'px';
        for (var c = 0; c < cols.length; c++) row.children[c].textContent = String(cell(r, c));
      }
    }
    body.addEventListener('scroll', function () {
      if (!pending) { pending = true; requestAnimationFrame(render); }
    }, { passive: true });
    return {
      el: h('div', { class: 'vtable', role: 'table' }, head, body),
      head: head,
      update: function (count) { n = count; body.scrollTop = 0; render(); },
      render: render
    };
  }

  // -- runs ----------------------------------------------------------------------------------
  function runsPage() {
    setCrumbs([]);
    return load('runs').then(function (data) {
      var runs = data.runs;
      var state = { text: '', key: null, dir: -1, selected: [] };
      var cols = [['label', 'run'], ['task', 'task'], ['components', 'components'], ['status', 'status'],
        ['main_metric', 'metric'], ['main_value', 'value'], ['cost_usd', 'LLM cost (USD)'],
        ['llm_calls', 'LLM calls'], ['created', 'date']];
      var tbody = h('tbody');
      var headRow = h('tr', null, h('th', null, ''));
      var cmp = h('button', { id: 'compare-selected', disabled: 'disabled', onclick: function () {
        location.hash = hash(['compare'].concat(state.selected));
      } }, 'Compare selected');
      cols.forEach(function (c) {
        var th = h('th', { class: 'sortable', dataset: { key: c[0] }, onclick: function () {
          state.dir = state.key === c[0] ? -state.dir : (c[0] === 'main_value' ? -1 : 1);
          state.key = c[0];
          draw();
        } }, c[1]);
        headRow.appendChild(th);
      });
      function draw() {
        var t = state.text.toLowerCase();
        var rows = runs.filter(function (r) {
          return !t || [r.label, r.task, r.components, r.status].join(' ').toLowerCase().indexOf(t) >= 0;
        });
        if (state.key) rows = sortRows(rows, state.key, state.dir);
        Array.prototype.forEach.call(headRow.children, function (th) {
          th.classList.remove('sorted-asc', 'sorted-desc');
          if (th.dataset.key && th.dataset.key === state.key) th.classList.add(state.dir > 0 ? 'sorted-asc' : 'sorted-desc');
        });
        tbody.textContent = '';
        rows.forEach(function (r) {
          var box = h('input', { type: 'checkbox', dataset: { run: r.id }, disabled: r.is_suite ? 'disabled' : null,
            onchange: function () {
              var i = state.selected.indexOf(r.id);
              if (box.checked && i < 0) state.selected.push(r.id);
              if (!box.checked && i >= 0) state.selected.splice(i, 1);
              if (state.selected.length >= 2) cmp.removeAttribute('disabled'); else cmp.setAttribute('disabled', 'disabled');
            } });
          box.checked = state.selected.indexOf(r.id) >= 0;
          var value = r.main_uncertainty || num(r.main_value);
          tbody.appendChild(h('tr', { dataset: { run: r.id } },
            h('td', null, box),
            h('td', null, link(['run', r.id], r.label, { class: 'run-link' })),
            h('td', null, r.task), h('td', null, r.components),
            h('td', { class: 'status-' + r.status }, r.status),
            h('td', null, r.main_metric || '–'), h('td', { class: 'num' }, value),
            h('td', { class: 'num' }, num(r.cost_usd, 4)), h('td', { class: 'num' }, r.llm_calls === null ? '–' : r.llm_calls),
            h('td', null, r.created || '–')));
        });
      }
      var filter = h('input', { type: 'text', id: 'runs-filter', placeholder: 'filter runs', oninput: function () {
        state.text = filter.value; draw();
      } });
      draw();
      show(h('h1', null, 'Runs'), h('div', { class: 'controls' }, filter, cmp,
        h('span', { class: 'note' }, 'select two or more runs of one task to compare them')),
        h('table', { id: 'runs' }, h('thead', null, headRow), tbody));
    });
  }

  // -- a run -----------------------------------------------------------------------------------
  function usageSection(p) {
    var out = [h('h2', null, 'LLM usage and failures')];
    var total = (p.usage && p.usage.total) || null;
    if (!total || !Object.keys(total).length) {
      out.push(h('p', { class: 'note' }, 'no LLM calls in this run'));
    } else {
      var t = h('table', { id: 'usage' });
      Object.keys(total).forEach(function (k) {
        var v = total[k];
        t.appendChild(h('tr', null, h('th', null, k), h('td', null, typeof v === 'object' ? JSON.stringify(v) : v)));
      });
      out.push(t);
    }
    var f = p.llm_failures || {};
    if (f.failed) {
      out.push(h('p', { class: 'error' }, f.failed + ' of ' + f.requests + ' LLM requests got no usable reply'));
      (f.examples || []).forEach(function (e) { out.push(h('pre', { class: 'failure' }, String(e.error) + ': ' + String(e.message))); });
    }
    return out;
  }

  function runPage(id) {
    return load('run/' + id).then(function (p) {
      var r = p.run;
      setCrumbs([link(['run', id], r.label)]);
      var parts = [h('h1', null, r.label), h('p', null, h('span', { class: 'pill' }, r.task),
        h('span', { class: 'pill status-' + r.status }, r.status), r.components),
        h('h2', null, 'Metrics'), h('pre', { class: 'table', id: 'metrics-table' }, p.table)];
      if (r.is_suite) {
        var ul = h('ul', { id: 'members' });
        r.members.forEach(function (m) { ul.appendChild(h('li', null, link(['run', m], m))); });
        show(parts, h('h2', null, 'Tasks'), ul, usageSection(p));
        return;
      }
      show(parts, usageSection(p), perQuery(id, p.per_query));
    });
  }

  function perQuery(id, pq) {
    var qids = pq.qids, names = pq.metrics, colsData = pq.columns;
    var all = qids.map(function (_, i) { return i; });
    var view = all.slice();
    var sort = { col: -1, dir: -1 };
    var texts = pq.texts || null;
    var fixed = texts ? 3 : 2;  // query, [text,] LLM failures, then the metrics
    var cols = [{ key: 'query', label: 'query', width: 'minmax(8em, 1fr)' }].concat(
      texts ? [{ key: 'text', label: 'text', width: 'minmax(12em, 3fr)' }] : [],
      [{ key: 'failures', label: 'LLM failures', num: true, width: '7em' }], names.map(function (m) {
        return { key: m, label: m, num: true };
      }));
    function value(i, c) {
      if (c === 0) return qids[i];
      if (texts && c === 1) return texts[i];
      if (c === fixed - 1) return pq.failures[i];
      return colsData[c - fixed][i];
    }
    var count = h('span', { id: 'query-count' });
    var vt = virtualTable(cols, view.length, function (r, c) {
      var v = value(view[r], c);
      return c < fixed ? v : num(v);
    }, function (r) { location.hash = hash(['run', id, 'query', qids[view[r]]]); }, function (c) {
      sort.dir = sort.col === c ? -sort.dir : (c === 0 ? 1 : -1);
      sort.col = c;
      apply();
    });
    var text = h('input', { type: 'text', id: 'query-filter', placeholder: texts ? 'query id or text contains' : 'query id contains',
      oninput: apply });
    var failed = h('input', { type: 'checkbox', id: 'only-failures', onchange: apply });
    var metric = h('select', { id: 'range-metric', onchange: apply }, names.map(function (m) { return h('option', { value: m }, m); }));
    var lo = h('input', { type: 'number', step: 'any', id: 'range-min', placeholder: 'min', oninput: apply });
    var hi = h('input', { type: 'number', step: 'any', id: 'range-max', placeholder: 'max', oninput: apply });
    function apply() {
      var t = text.value.toLowerCase();
      var m = names.indexOf(metric.value);
      var a = lo.value === '' ? -Infinity : Number(lo.value), b = hi.value === '' ? Infinity : Number(hi.value);
      view = all.filter(function (i) {
        if (t && qids[i].toLowerCase().indexOf(t) < 0 && !(texts && texts[i].toLowerCase().indexOf(t) >= 0)) return false;
        if (failed.checked && !pq.failures[i]) return false;
        if ((lo.value !== '' || hi.value !== '') && m >= 0) {
          var v = colsData[m][i];
          if (v === null || v < a || v > b) return false;
        }
        return true;
      });
      if (sort.col >= 0) {
        var c = sort.col, d = sort.dir;
        view.sort(function (x, y) {
          var p = value(x, c), q = value(y, c);
          if (p === null || q === null) return p === q ? 0 : (p === null ? 1 : -1);
          if (typeof p === 'number') return d * (p - q) || (x - y);
          return d * String(p).localeCompare(String(q));
        });
      }
      Array.prototype.forEach.call(vt.head.children, function (s, i) {
        s.classList.remove('sorted-asc', 'sorted-desc');
        if (i === sort.col) s.classList.add(sort.dir > 0 ? 'sorted-asc' : 'sorted-desc');
      });
      count.textContent = view.length + ' of ' + qids.length + ' queries';
      vt.update(view.length);
    }
    setTimeout(apply, 0);
    return [h('h2', null, 'Queries'), h('div', { class: 'controls' }, text,
      h('label', null, failed, ' only queries with LLM failures'), h('label', null, 'range of ', metric), lo, hi, count),
      vt.el];
  }

  // -- a query ---------------------------------------------------------------------------------
  function gradeCell(g) {
    if (g === null || g === undefined) return h('td', { class: 'num' }, '–');
    return h('td', { class: 'num ' + (g > 0 ? 'grade-pos' : 'grade-0') }, g);
  }

  function rankingTable(q, depth) {
    var labels = Object.keys(q.rankings);
    var modes = q.qrels ? Object.keys(q.qrels) : [];
    var rankOf = {}, docs = [];
    // rows in the final ranking's order, then what only an earlier stage ranked
    var byFinal = labels.filter(function (l) { return l.indexOf('final[') === 0; })
      .concat(labels.filter(function (l) { return l.indexOf('final[') !== 0; }));
    byFinal.forEach(function (l) {
      rankOf[l] = {};
      q.rankings[l].forEach(function (hit, i) {
        rankOf[l][hit[0]] = hit[1];
        if (i < depth && docs.indexOf(hit[0]) < 0) docs.push(hit[0]);
      });
    });
    var judged = {};
    (q.judgments || []).forEach(function (j) { judged[j.mode + '\u0000' + j.doc_id] = j.score; });
    var jmodes = Array.from(new Set((q.judgments || []).map(function (j) { return String(j.mode); })));
    var head = h('tr', null, h('th', null, 'document'), labels.map(function (l) { return h('th', null, 'rank ' + l); }),
      modes.map(function (m) { return h('th', null, 'grade [' + m + ']'); }),
      jmodes.map(function (m) { return h('th', null, 'judge [' + m + ']'); }));
    var final = labels.filter(function (l) { return l.indexOf('final[') === 0; });
    // arrows: a final ranking against its own first stage when the folder holds it, else a mode's
    // ranking against the first mode's
    function baseOf(l) {
      if (l.indexOf('final[') !== 0) return null;
      var first = rankOf['first_stage[' + l.slice(6)];
      if (first) return first;
      return l !== final[0] ? rankOf[final[0]] : null;
    }
    var tbody = h('tbody');
    docs.forEach(function (d) {
      var grades = modes.map(function (m) { var g = q.qrels[m][d]; return g === undefined ? null : g; });
      var changed = modes.length > 1 && grades.some(function (g) { return (g || 0) !== (grades[0] || 0); });
      var tr = h('tr', { class: changed ? 'changed' : null, dataset: { doc: d } }, h('td', null, d));
      labels.forEach(function (l) {
        var r = rankOf[l][d];
        var base = baseOf(l);
        var cls = 'num';
        var text = r === undefined ? '–' : String(r);
        if (base && r !== undefined && base[d] !== undefined && base[d] !== r) {
          cls += base[d] > r ? ' up' : ' down';
          text += ' (' + (base[d] > r ? '↑' : '↓') + Math.abs(base[d] - r) + ')';
        }
        tr.appendChild(h('td', { class: cls }, text));
      });
      grades.forEach(function (g) { tr.appendChild(gradeCell(g)); });
      jmodes.forEach(function (m) {
        var s = judged[m + '\u0000' + d];
        tr.appendChild(h('td', { class: 'num' }, s === undefined ? '–' : num(s, 3)));
      });
      tbody.appendChild(tr);
    });
    var notes = [];
    if (!q.first_stage) notes.push('This results folder holds the final ranking only (no run.first_stage.trec): ranks before reranking are not shown.');
    if (!q.has.qrels) notes.push('This results folder records no gold grades (qrels.jsonl).');
    if (modes.length > 1) notes.push('Highlighted: documents whose relevance differs between modes.');
    if (final.length > 1) {
      notes.push('One rank column per mode; arrows give a document\'s move from ' +
        (q.first_stage ? 'the first stage' : 'the ' + final[0].slice(6, -1) + ' ranking') + '.');
    }
    return [h('table', { class: 'ranking', dataset: { run: q.run } }, h('thead', null, head), tbody),
      notes.map(function (n) { return h('p', { class: 'note' }, n); })];
  }

  function queryText(q) {
    if (!q.queries) return h('p', { class: 'note' }, 'This results folder records no query text (queries.jsonl).');
    var t = h('table', { id: 'query-text' }, h('tr', null, h('th', null, 'mode'), h('th', null, 'text'), h('th', null, 'instruction')));
    Object.keys(q.queries).forEach(function (m) {
      var v = q.queries[m];
      t.appendChild(h('tr', null, h('td', null, m), h('td', { class: 'qtext' }, v.text || ''), h('td', null, v.instruction || '')));
    });
    return t;
  }

  function callCost(c) {
    if (typeof c.output_tokens !== 'number' || c.cached) return '';
    return ' · ' + c.input_tokens + ' in / ' + c.output_tokens + ' out' +
      (c.reasoning_tokens ? ' (' + c.reasoning_tokens + ' reasoning)' : '') +
      (typeof c.cost_usd === 'number' ? ' · $' + c.cost_usd.toFixed(6) : '') +
      (typeof c.seconds === 'number' ? ' · ' + c.seconds.toFixed(2) + ' s' : '');
  }

  function llmCalls(q) {
    var out = [h('h2', null, 'LLM calls')];
    if (q.llm_note) out.push(h('p', { class: 'note' }, q.llm_note));
    var calls = q.llm_calls || [];
    if (!calls.length && !q.llm_note) out.push(h('p', { class: 'note' }, 'no LLM call for this query'));
    calls.forEach(function (c, i) {
      var head = 'call ' + (i + 1) + (c.component ? ' · ' + c.component : '') + ' · ' + (c.cached ? 'cache hit' : 'sent') +
        (c.parse ? ' · parse: ' + c.parse : '') + (c.error ? ' · FAILED' : '') + callCost(c);
      var d = h('details', { class: 'call', dataset: { index: i } }, h('summary', null, head));
      if (c.error) d.appendChild(h('pre', { class: 'error call-error' }, String(c.error)));
      if (c.missing) d.appendChild(h('p', { class: 'note' }, c.missing));
      (c.messages || []).forEach(function (m) {
        d.appendChild(h('div', { class: 'message' }, h('span', { class: 'role' }, String(m.role)),
          h('pre', { class: 'prompt' }, typeof m.content === 'string' ? m.content : JSON.stringify(m.content))));
      });
      if (typeof c.reasoning === 'string') {
        d.appendChild(h('div', { class: 'reasoning-block' }, h('span', { class: 'role' }, 'reasoning (not the answer; never parsed)'),
          h('pre', { class: 'reasoning' }, c.reasoning)));
      }
      if (c.reply !== undefined) d.appendChild(h('div', null, h('span', { class: 'role' }, 'reply'), h('pre', { class: 'reply' }, String(c.reply))));
      out.push(d);
    });
    return out;
  }

  function metricsOf(q) {
    var t = h('table', { class: 'query-metrics' });
    Object.keys(q.metrics || {}).forEach(function (m) {
      t.appendChild(h('tr', null, h('th', null, m), h('td', { class: 'num', dataset: { metric: m } }, num(q.metrics[m]))));
    });
    return t;
  }

  function queryPage(id, qid) {
    return load('query/' + id + '/' + qid).then(function (q) {
      setCrumbs([link(['run', id], q.label), link(['run', id, 'query', qid], qid)]);
      show(h('h1', { id: 'query-id' }, qid), h('p', null, h('span', { class: 'pill' }, q.task), q.label),
        queryText(q), h('h2', null, 'Metrics of this query'), metricsOf(q),
        h('h2', null, 'Candidates and ranks'), rankingTable(q, 30), llmCalls(q));
    });
  }

  // -- compare ---------------------------------------------------------------------------------
  function deltaChart(ids, per) {
    var items = per.queries, n = items.length, W = 900, H = 220, pad = 20;
    var max = items.reduce(function (m, x) { return Math.max(m, Math.abs(x[3])); }, 0) || 1;
    var chart = svg('svg', { class: 'deltas', width: W, height: H + 2 * pad, viewBox: '0 0 ' + W + ' ' + (H + 2 * pad), role: 'img' });
    var mid = pad + H / 2, bw = W / Math.max(n, 1);
    items.forEach(function (x, i) {
      var hgt = Math.abs(x[3]) / max * (H / 2);
      var cls = x[3] > 1e-12 ? 'win' : (x[3] < -1e-12 ? 'loss' : 'tie');
      var rect = svg('rect', { class: 'bar ' + cls, x: i * bw, y: x[3] > 0 ? mid - hgt : mid, width: Math.max(bw - (n < 200 ? 1 : 0), 0.5),
        height: Math.max(hgt, 1), dataset: { qid: x[0], delta: x[3] },
        onclick: function () { location.hash = hash(['compare'].concat(ids, ['query', x[0]])); } });
      var title = svg('title', {});
      title.textContent = x[0] + ': ' + num(x[3]);
      rect.appendChild(title);
      chart.appendChild(rect);
    });
    chart.appendChild(svg('line', { class: 'zero', x1: 0, x2: W, y1: mid, y2: mid }));
    return chart;
  }

  // ranks with their 95% bootstrap intervals, best first (text through textContent only)
  function rankChart(rows) {
    var n = rows.length, W = 640, rowH = 24, top = 14, right = 70;
    var left = Math.min(280, 24 + 7 * rows.reduce(function (m, r) { return Math.max(m, String(r.system).length + 4); }, 4));
    var H = top + rowH * n + 34, span = Math.max(1, n - 1);
    function x(rank) { return left + (W - left - right) * (rank - 1) / span; }
    function text(attrs, value) { var t = svg('text', attrs); t.textContent = value; return t; }
    var chart = svg('svg', { class: 'rank-chart', width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, role: 'img' });
    for (var k = 1; k <= n; k++) {
      chart.appendChild(svg('line', { class: 'tick', x1: x(k), x2: x(k), y1: top - 4, y2: top + rowH * n }));
      chart.appendChild(text({ x: x(k), y: top + rowH * n + 16, 'text-anchor': 'middle' }, String(k)));
    }
    chart.appendChild(text({ x: W - right, y: top + rowH * n + 30, 'text-anchor': 'end' }, 'rank (1 = best)'));
    rows.forEach(function (r, i) {
      var y = top + rowH * (i + 0.5), g = (r.groups || []).join('');
      var label = r.system + (g ? ' (' + g + ')' : '');
      chart.appendChild(text({ x: left - 10, y: y + 4, 'text-anchor': 'end' }, label));
      var line = svg('line', { class: 'rank-interval', x1: x(r.rank_ci[0]), x2: x(r.rank_ci[1]), y1: y, y2: y,
        dataset: { system: r.system } });
      var dot = svg('circle', { class: 'rank-point', cx: x(r.rank), cy: y, r: 4.5, dataset: { system: r.system, rank: r.rank } });
      var title = svg('title', {});
      title.textContent = r.system + ': rank ' + r.rank + ' (95% interval ' + r.rank_ci[0] + ' to ' + r.rank_ci[1] + '), mean ' + num(r.mean);
      dot.appendChild(title);
      chart.appendChild(line);
      chart.appendChild(dot);
      chart.appendChild(text({ x: W - 4, y: y + 4, 'text-anchor': 'end', class: 'rank-mean' }, num(r.mean)));
    });
    return chart;
  }

  function rankSection(p, m) {
    var rows = (p.ranks || {})[m];
    if (!rows || !rows.length) return null;
    var t = h('table', { id: 'compare-ranks' }, h('tr', null, ['rank', 'run', 'mean', '95% rank CI', 'group'].map(function (x) {
      return h('th', null, x);
    })));
    rows.forEach(function (r) {
      t.appendChild(h('tr', { dataset: { system: r.system } }, h('td', { class: 'num' }, String(r.rank)), h('td', null, r.system),
        h('td', { class: 'num' }, num(r.mean)), h('td', { class: 'num' }, '[' + r.rank_ci[0] + ', ' + r.rank_ci[1] + ']'),
        h('td', null, (r.groups || []).join(''))));
    });
    return [h('h2', null, 'Ranks'), rankChart(rows), t, h('p', { class: 'note' }, String(p.rank_method || ''))];
  }

  function computeChart(c) {
    var chart = svg('svg', { class: 'compute-chart', width: c.width, height: c.height, viewBox: '0 0 ' + c.width + ' ' + c.height,
      role: 'img', dataset: { axis: c.key, frontier: c.frontier.join(',') } });
    c.y_ticks.forEach(function (t) {
      chart.appendChild(svg('line', { x1: c.left, x2: c.right, y1: t.y, y2: t.y, stroke: '#eee' }));
      var tx = svg('text', { x: c.left - 4, y: t.y + 4, 'text-anchor': 'end' }); tx.textContent = t.text; chart.appendChild(tx);
    });
    c.x_ticks.forEach(function (t) {
      var tx = svg('text', { x: t.x, y: c.bottom + 16, 'text-anchor': 'middle' }); tx.textContent = t.text; chart.appendChild(tx);
    });
    chart.appendChild(svg('line', { x1: c.left, x2: c.right, y1: c.bottom, y2: c.bottom, stroke: '#555' }));
    var axis = svg('text', { x: (c.left + c.right) / 2, y: c.height - 4, 'text-anchor': 'middle' });
    axis.textContent = c.label; chart.appendChild(axis);
    if (c.path) chart.appendChild(svg('path', { class: 'frontier', d: c.path }));
    c.dots.forEach(function (d) {
      var dot = svg('circle', { class: 'point' + (d.frontier ? ' frontier' : ''), cx: d.x, cy: d.y, r: d.frontier ? 6 : 4,
        fill: d.color, dataset: { system: d.system, frontier: d.frontier ? 'yes' : 'no' } });
      var title = svg('title', {}); title.textContent = d.system + ': ' + num(d.value) + ' at ' + d.shown + (d.frontier ? ' (frontier)' : '');
      dot.appendChild(title); chart.appendChild(dot);
      var label = svg('text', { class: 'point-label', x: d.lx, y: d.ly, 'text-anchor': d.anchor }); label.textContent = d.system;
      chart.appendChild(label);
    });
    return h('figure', { class: 'compute-figure' }, h('figcaption', null, c.metric + ' against ' + c.label), chart,
      c.left_out.length ? h('p', { class: 'note' }, 'not drawn (no ' + c.label + ' recorded): ' + c.left_out.join(', ')) : null);
  }

  function computeSection(ids, cs) {
    if (!cs) return null;
    var out = [h('h2', null, 'Effectiveness against compute (' + cs.metric + ')'),
      h('p', { class: 'note' }, 'one point per run; circled points (dashed line): the Pareto frontier. Compute: what the run\'s replies took to make, sent or read from the cache.'),
      h('div', { class: 'charts' }, cs.charts.map(computeChart))];
    cs.deltas.forEach(function (d) {
      var per = { queries: d.queries.map(function (x) { return [x.query_id, x.base, x.value, x.delta]; }) };
      var bars = deltaChart(ids, per);
      bars.setAttribute('class', 'compute-deltas');  // not the comparison's own chart (svg.deltas)
      bars.dataset.system = d.system;
      out.push(h('h3', null, d.system + ' − ' + d.against + ' (the cheapest, by ' + cs.cheapest_by + '), per query'),
        h('p', { class: 'wtl-line compute-wtl' }, 'helped ' + d.wins + ' · ties ' + d.ties + ' · hurt ' + d.losses), bars);
    });
    return h('section', { id: 'compute', dataset: { metric: cs.metric } }, out);
  }

  function comparePage(ids) {
    return load('compare/' + ids.join('/')).then(function (p) {
      if (p.error) throw new Error(p.error);
      setCrumbs([link(['compare'].concat(ids), 'compare ' + ids.join(' · '))]);
      var metrics = Object.keys(p.deltas);
      var select = h('select', { id: 'compare-metric', onchange: function () { draw(); } },
        metrics.map(function (m) { return h('option', { value: m }, m); }));
      var body = h('div');
      function draw() {
        var m = select.value;
        var mc = p.comparison.results.filter(function (r) { return r.metric === m; })[0];
        body.textContent = '';
        var t = h('table', { id: 'compare-stats' }, h('tr', null, ['system', 'mean', 'baseline', 'diff', '95% CI', 'd_z', 'W/T/L',
          'p_rand', 'p_holm', 'p_t', 'sig'].map(function (x) { return h('th', null, x); })));
        mc.comparisons.forEach(function (c) {
          t.appendChild(h('tr', { dataset: { system: c.system } }, h('td', null, c.system), h('td', { class: 'num' }, num(c.mean)),
            h('td', { class: 'num' }, num(c.baseline_mean)), h('td', { class: 'num' }, num(c.diff)),
            h('td', { class: 'num' }, '[' + num(c.ci_low) + ', ' + num(c.ci_high) + ']'), h('td', { class: 'num' }, num(c.effect_size, 3)),
            h('td', { class: 'num wtl' }, c.wins + '/' + c.ties + '/' + c.losses), h('td', { class: 'num' }, pval(c.p_randomization)),
            h('td', { class: 'num' }, pval(c.p_randomization_holm)), h('td', { class: 'num' }, pval(c.p_t)),
            h('td', null, c.significant ? (c.diff > 0 ? '+' : '-') : '')));
        });
        add(body, [h('p', null, 'baseline: ', h('b', null, p.names[0]), ' · ', String(mc.n_queries), ' queries',
          mc.note ? ' · ' + mc.note : ''), t,
          h('p', { class: 'note' }, p.comparison.settings.test + '; Holm correction over ' + p.comparison.settings.family +
            '; B = ' + p.comparison.settings.permutations + ', seed ' + p.comparison.settings.seed), rankSection(p, m)]);
        p.deltas[m].forEach(function (per) {
          add(body, [h('h2', null, per.system + ' − baseline, per query (sorted)'),
            h('p', { class: 'wtl-line' }, 'wins ' + per.wins + ' · ties ' + per.ties + ' · losses ' + per.losses),
            deltaChart(ids, per)]);
          var tb = h('table', { class: 'delta-table' }, h('tr', null, h('th', null, 'query'), h('th', null, 'baseline'),
            h('th', null, 'system'), h('th', null, 'delta')));
          per.queries.slice(0, 10).concat(per.queries.length > 20 ? [] : per.queries.slice(10)).forEach(function (x) {
            tb.appendChild(h('tr', null, h('td', null, link(['compare'].concat(ids, ['query', x[0]]), x[0], { class: 'delta-link' })),
              h('td', { class: 'num' }, num(x[1])), h('td', { class: 'num' }, num(x[2])), h('td', { class: 'num' }, num(x[3]))));
          });
          add(body, [tb, per.queries.length > 20 ? h('p', { class: 'note' }, 'the 10 largest gains shown; click a bar for any query') : null]);
        });
      }
      draw();
      show(h('h1', null, 'Compare: ' + p.task), h('div', { class: 'controls' }, h('label', null, 'metric ', select)), body,
        computeSection(ids, p.compute));
    });
  }

  function compareQueryPage(ids, qid) {
    return Promise.all(ids.map(function (id) { return load('query/' + id + '/' + qid).catch(function (e) { return { error: e, run: id }; }); }))
      .then(function (qs) {
        setCrumbs([link(['compare'].concat(ids), 'compare ' + ids.join(' · ')), qid]);
        var ok = qs.filter(function (q) { return !q.error; });
        show(h('h1', { id: 'query-id' }, qid), ok.length ? queryText(ok[0]) : null,
          h('div', { class: 'side' }, qs.map(function (q) {
            if (q.error) return h('section', { dataset: { run: q.run } }, h('p', { class: 'error' }, String(q.error.message || q.error)));
            return h('section', { class: 'side-run', dataset: { run: q.run } }, h('h2', null, link(['run', q.run, 'query', qid], q.label)),
              metricsOf(q), rankingTable(q, 20));
          })));
      });
  }

  // -- routing ---------------------------------------------------------------------------------
  function route() {
    var parts = location.hash.replace(/^#\/?/, '').split('/').filter(function (x) { return x !== ''; }).map(function (x) {
      try { return decodeURIComponent(x); } catch (e) { return x; }
    });
    var done;
    if (!parts.length) done = runsPage();
    else if (parts[0] === 'run' && parts.length === 2) done = runPage(parts[1]);
    else if (parts[0] === 'run' && parts[2] === 'query' && parts.length >= 4) done = queryPage(parts[1], parts.slice(3).join('/'));
    else if (parts[0] === 'compare') {
      var qi = parts.indexOf('query');
      var ids = parts.slice(1, qi < 0 ? undefined : qi);
      done = qi < 0 ? comparePage(ids) : compareQueryPage(ids, parts.slice(qi + 1).join('/'));
    } else done = Promise.reject(new Error('no such page'));
    app.dataset.ready = '0';
    done.catch(fail).then(function () { app.dataset.ready = '1'; window.scrollTo(0, 0); });
  }
  window.addEventListener('hashchange', route);
  route();
}());
