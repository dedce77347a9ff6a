// The script of the page `upskill runs --html` writes: draws what is opened, runs the search.

"use strict";
// Texts go in through esc() or textContent only; the checks' HTML was escaped when the page was
// written (src/report/runs_html.cpp).
let D = null;
const data = () => D || (D = JSON.parse(document.getElementById('upskill-data').textContent));
const esc = s => String(s ?? '').replace(
    /[&<>"']/g, c => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'}[c]));
const cls = o => o === 'passed' ? 'pass' : o === 'failed' || o === 'error' ? 'fail' : 'notrun';
const batchOf = b => data().batches[b];

// The trials of each (model, case) of a batch, worked out once.
function byCase(B) {
  if (!B.ix) {
    B.ix = new Map();
    B.trials.forEach((t, i) => {
      const k = t.m + '|' + t.c;
      if (!B.ix.has(k)) B.ix.set(k, []);
      B.ix.get(k).push(i);
    });
  }
  return B.ix;
}

// One arm of a case over its runs: passes of scored runs, and what else happened.
function tally(B, list, a) {
  const n = {};
  let k = 0;
  for (const i of list) {
    const t = B.trials[i];
    if (t.a !== a) continue;
    k++;
    const o = t.x && t.o !== 'not run' ? 'left out (pair not run)' : t.o;
    n[o] = (n[o] || 0) + 1;
  }
  if (!k) return '<td class="none">—</td>';
  const p = n.passed || 0, f = n.failed || 0;
  let s = p + f ? p + '/' + (p + f) + ' passed' : 'nothing scored';
  for (const o of ['error', 'not run', 'left out (pair not run)', 'never ran'])
    if (n[o]) s += ' · ' + n[o] + ' ' + o;
  return '<td class="' +
      (f || n.error     ? 'fail' :
           p && p === k ? 'pass' :
                          'notrun') +
      '">' + s + '</td>';
}

function cell(B, i) {
  if (i === undefined) return '<td class="none">—</td>';
  const t = B.trials[i];
  let s = '<span class="o-' + cls(t.o) + '">' + esc(t.o) + '</span>';
  if (t.sc !== undefined) s += ' · score ' + Number(t.sc).toFixed(2);
  if (t.x && t.o !== 'not run') s += ' · left out (pair not run)';
  if (t.tk !== undefined) s += ' · ' + t.tk + ' tokens';
  if (t.tu) s += ' · tokens unavailable';
  if (t.ld !== undefined) s += t.ld ? ' · <b>loaded the skill</b>' : ' · did not load the skill';
  return '<td class="' + cls(t.o) + '"><details class="trial" data-t="' + i + '"><summary>' + s +
      '</summary></details></td>';
}

function drawBatch(el) {
  if (el.dataset.drawn) return;
  el.dataset.drawn = 1;
  const B = batchOf(+el.dataset.b), ix = byCase(B);
  let h = '';
  B.models.forEach((m, mi) => {
    h += '<h4>' + esc(m) +
        '</h4><table class="pairs"><thead><tr><th>case</th><th>baseline</th><th>with skill</th></tr></thead>';
    B.cases.forEach((c, ci) => {
      const list = ix.get(mi + '|' + ci);
      if (!list) return;
      h += '<tbody class="case" data-m="' + mi + '" data-c="' + ci +
          '"><tr><td><details class="case"><summary><code>' + esc(c.id) +
          '</code></summary></details></td>' + tally(B, list, 0) + tally(B, list, 1) +
          '</tr></tbody>';
    });
    h += '</table>';
  });
  el.querySelector('.body').innerHTML = h;
}

// A case opened: its prompt, then every run with the baseline and the with-skill trial side by

// side.
function drawCase(det) {
  const body = det.closest('tbody.case');
  let row = body.querySelector('tr.runs');
  if (row) {
    row.hidden = !det.open;
    return;
  }
  if (!det.open) return;
  const B = batchOf(+det.closest('details.batch').dataset.b);
  const m = +body.dataset.m, c = +body.dataset.c, at = new Map();
  for (const i of byCase(B).get(m + '|' + c)) {
    const t = B.trials[i];
    at.set(t.r + '|' + t.a, i);
  }
  let h = '<pre>' + esc((B.cases[c] || {}).p) +
      '</pre><table><thead><tr><th>run</th><th>baseline</th><th>with skill</th></tr></thead><tbody>';
  for (let r = 0; r < B.runs; r++) {
    if (!at.has(r + '|0') && !at.has(r + '|1')) continue;
    h += '<tr><td>' + (r + 1) + '</td>' + cell(B, at.get(r + '|0')) + cell(B, at.get(r + '|1')) +
        '</tr>';
  }
  row = document.createElement('tr');
  row.className = 'runs';
  row.innerHTML = '<td colspan="3">' + h + '</tbody></table></td>';
  body.append(row);
}

function drawTrial(el) {
  if (el.dataset.drawn) return;
  el.dataset.drawn = 1;
  const t = batchOf(+el.closest('details.batch').dataset.b).trials[+el.dataset.t];
  const box = document.createElement('div');
  box.className = 'tb';
  const add = (title, text) => {
    const h = document.createElement('h5');
    h.textContent = title;
    const p = document.createElement('pre');
    p.textContent = text;
    box.append(h, p);
  };
  if (t.err !== undefined) add('error', t.err);
  if (t.ans !== undefined) add('answer', t.ans);
  if (t.chk !== undefined) {
    const h = document.createElement('h5');
    h.textContent = 'checks';
    const d = document.createElement('div');
    d.innerHTML =
        '<table class="checks"><thead><tr><th>check</th><th>status</th><th>expected</th><th>found</th><th>why</th></tr></thead><tbody>' +
        t.chk + '</tbody></table>';
    box.append(h, d);
  }
  if (t.tr !== undefined) {
    const d = document.createElement('details');
    const s = document.createElement('summary');
    s.textContent = 'agent transcript';
    const p = document.createElement('pre');
    p.textContent = t.tr;
    d.append(s, p);
    box.append(d);
  }
  el.append(box);
}
document.addEventListener('toggle', e => {
  const el = e.target;
  if (el.matches('details.case')) {
    drawCase(el);
    return;
  }
  if (!el.open) return;
  if (el.matches('details.batch'))
    drawBatch(el);
  else if (el.matches('details.trial'))
    drawTrial(el);
}, true);

// Opens batch b, the case of its trial i, and the trial; returns the trial's element.
function reveal(b, i) {
  const el = document.querySelector('details.batch[data-b="' + b + '"]');
  el.open = true;
  drawBatch(el);
  const t = batchOf(b).trials[i],
        det =
            el.querySelector('tbody.case[data-m="' + t.m + '"][data-c="' + t.c + '"] details.case');
  det.open = true;
  drawCase(det);
  const tr = det.closest('tbody.case').querySelector('details.trial[data-t="' + i + '"]');
  tr.open = true;
  drawTrial(tr);
  return tr;
}
let hay = null;

function haystack() {
  if (hay) return hay;
  hay = data().batches.map(
      B => B.trials.map(
          t => ((B.cases[t.c] || {}).p + '\n' + (t.ans || '') + '\n' + (t.why || '') + '\n' +
                (t.err || ''))
                   .toLowerCase()));
  return hay;
}

function matches(B, b, i, terms, fields) {
  const t = B.trials[i];
  for (const [k, v] of fields) {
    const f = k === 'outcome' ? t.o :
        k === 'arm'           ? (t.a ? 'with_skill' : 'baseline') :
        k === 'model'         ? B.models[t.m] :
        k === 'case'          ? (B.cases[t.c] || {}).id :
        k === 'batch'         ? B.id :
                                '';
    if (String(f).toLowerCase() !== v) return false;
  }
  const h = haystack()[b][i];
  return terms.every(w => h.includes(w));
}

function search(q) {
  const t0 = performance.now();
  const words = q.toLowerCase().split(/\s+/).filter(Boolean), terms = [], fields = [];
  for (const w of words) {
    const m = /^(outcome|arm|model|case|batch):(.+)$/.exec(w);
    if (m)
      fields.push([m[1], m[1] === 'outcome' ? m[2].replace(/_/g, ' ') : m[2]]);
    else
      terms.push(w);
  }
  const list = document.getElementById('results'), hits = document.getElementById('hits');
  let n = 0, shown = '';
  document.querySelectorAll('details.batch').forEach(el => {
    const b = +el.dataset.b, B = batchOf(b);
    let k = 0;
    if (words.length)
      B.trials.forEach((t, i) => {
        if (!matches(B, b, i, terms, fields)) return;
        k++;
        n++;
        if (n <= 200)
          shown += '<li><a href="#" data-b="' + b + '" data-t="' + i + '">' + esc(B.id) + ' · ' +
              esc(B.models[t.m]) + ' · ' + esc((B.cases[t.c] || {}).id) + ' · run ' + (t.r + 1) +
              ' · ' + (t.a ? 'with skill' : 'baseline') + ' · ' + esc(t.o) + '</a></li>';
      });
    el.hidden = words.length > 0 && k === 0;
  });
  list.innerHTML = shown;
  hits.textContent = words.length ?
      n + ' matching trial' + (n === 1 ? '' : 's') + (n > 200 ? ' (first 200 listed)' : '') :
      '';
  document.body.dataset.results = words.length ? n : '';
  document.body.dataset.searchMs = (performance.now() - t0).toFixed(1);
}
let timer = 0;
const input = document.getElementById('q');
if (input) {
  input.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(() => search(input.value), 150);
  });
  document.getElementById('results').addEventListener('click', e => {
    const a = e.target.closest('a[data-b]');
    if (!a) return;
    e.preventDefault();
    const tr = reveal(+a.dataset.b, +a.dataset.t);
    tr.scrollIntoView({block: 'center'});
    tr.classList.add('hit');
  });
  const hash = new URLSearchParams(location.hash.slice(1)), q = hash.get('q'), ob = hash.get('b'),
        ot = hash.get('t');
  if (ob !== null) {
    const el =
        [...document.querySelectorAll('details.batch')].find(e => batchOf(+e.dataset.b).id === ob);
    if (el) {
      const t0 = performance.now(), b = +el.dataset.b;
      el.open = true;
      drawBatch(el);
      const tr = ot !== null && batchOf(b).trials[+ot] ? reveal(b, +ot) : null;
      (tr || el).scrollIntoView(tr ? {block: 'center'} : undefined);
      if (tr) tr.classList.add('hit');
      document.body.dataset.drawMs = (performance.now() - t0).toFixed(1);
    }
  }
  if (q !== null) {
    input.value = q;
    search(q);
  }
}

// Milliseconds from the start of navigation until the page was ready (the data not yet parsed).
document.body.dataset.readyMs = performance.now().toFixed(1);
