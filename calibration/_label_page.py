"""The labelling page: one self-contained HTML file (no server, no network: a CSP forbids every
fetch) that shows one case at a time and exports the labels as JSONL.

Keys: 1-9 pick a label (and move on), n / right arrow next, p / left arrow previous, u next
unlabelled, v show or hide what the run decided (hidden by default so it does not anchor the
labeller), x export; in the note or annotator field keys type text and Escape leaves the field.
Labels and notes are kept in the browser's localStorage per labelling set, so a reload loses
nothing. The set is embedded as JSON with every ``<`` escaped, and the page builds its DOM with
``textContent`` only: trajectory content cannot inject markup or script.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence

from calibration._labelling import LabelItem
from judge import content_hash

CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{position:sticky;top:0;background:#fff;border-bottom:1px solid #d8dce3;padding:8px 16px;display:flex;gap:16px;align-items:center;flex-wrap:wrap}
header h1{font-size:16px;margin:0}
main{max-width:1000px;margin:16px auto;padding:0 16px}
.card{background:#fff;border:1px solid #d8dce3;border-radius:6px;padding:12px 16px;margin-bottom:12px}
.meta{color:#5a6372}
pre{white-space:pre-wrap;word-break:break-word;background:#f1f3f6;padding:6px 8px;border-radius:4px;margin:4px 0}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #e4e7ec;padding:4px 6px;text-align:left;vertical-align:top}
.labels button{font-size:15px;margin:4px 8px 4px 0;padding:6px 12px;border:1px solid #9aa3b2;border-radius:4px;background:#fff;cursor:pointer}
.labels button.chosen{background:#2456c9;color:#fff;border-color:#2456c9}
textarea{width:100%;min-height:60px;font:inherit}
.msg{color:#b3261e}
.keys{color:#5a6372;font-size:12px}
"""

_SCRIPT = r"""
(function () {
  var items = JSON.parse(document.getElementById('label-set').textContent);
  var KEY = 'trajectory-judge-labels:' + document.body.getAttribute('data-set');
  var state = load();
  var pos = 0, showRun = false;
  function load() {
    try { var s = JSON.parse(localStorage.getItem(KEY)); if (s && s.labels) return s; } catch (e) {}
    return {annotator: '', labels: {}, notes: {}};
  }
  function save() { try { localStorage.setItem(KEY, JSON.stringify(state)); } catch (e) {} }
  function el(tag, text, cls) { var e = document.createElement(tag); if (text !== undefined && text !== null) e.textContent = text; if (cls) e.className = cls; return e; }
  function show(v) { return typeof v === 'string' ? v : JSON.stringify(v, null, 1); }
  function field(card, name, value) { if (value === undefined || value === null) return; card.appendChild(el('h3', name)); card.appendChild(el('pre', show(value))); }
  function labelled() { return items.filter(function (it) { return state.labels[it.item_id]; }).length; }
  function progress() {
    var n = labelled();
    document.getElementById('progress').textContent = 'item ' + (pos + 1) + ' / ' + items.length + ' · labelled ' + n + ' / ' + items.length;
    document.body.setAttribute('data-labelled', String(n));
  }
  function render() {
    var it = items[pos], main = document.getElementById('item');
    main.textContent = '';
    var head = el('div', null, 'card');
    head.appendChild(el('div', 'rubric ' + it.rubric + ' · check ' + it.check + ' · task ' + (it.task_id || '-') + ' · trajectory ' + (it.trajectory_id || '-') + ' · turn ' + (it.turn_id || '-'), 'meta'));
    var labels = el('div', null, 'labels');
    it.labels.forEach(function (lab, i) {
      var b = el('button', (i + 1) + ' ' + lab);
      b.setAttribute('data-label', lab);
      if (state.labels[it.item_id] === lab) b.className = 'chosen';
      b.addEventListener('click', function () { choose(i); });
      labels.appendChild(b);
    });
    head.appendChild(labels);
    var note = el('textarea'); note.id = 'note'; note.placeholder = 'note (optional)';
    note.value = state.notes[it.item_id] || '';
    note.addEventListener('input', function () { state.notes[it.item_id] = note.value; save(); });
    head.appendChild(note);
    main.appendChild(head);
    var ctx = el('div', null, 'card'), c = it.context || {};
    field(ctx, 'Question', c.question);
    field(ctx, 'Gold answers', c.gold_answers);
    field(ctx, 'Criteria', c.criteria);
    field(ctx, 'Policy', c.policy);
    if (c.steps && c.steps.length) {
      ctx.appendChild(el('h3', 'Steps'));
      var t = el('table'), hr = el('tr');
      ['#', 'tool', 'arguments', 'status', 'result'].forEach(function (h) { hr.appendChild(el('th', h)); });
      t.appendChild(hr);
      c.steps.forEach(function (s) {
        var tr = el('tr');
        [s.step, s.name, show(s.arguments), s.status, show(s.result)].forEach(function (v) { var td = el('td'); td.appendChild(el('pre', String(v))); tr.appendChild(td); });
        t.appendChild(tr);
      });
      ctx.appendChild(t);
    }
    field(ctx, 'Final answer', c.answer);
    if (!c.question) field(ctx, 'Material', it.material);
    main.appendChild(ctx);
    var run = el('div', null, 'card'); run.id = 'run'; run.hidden = !showRun;
    var r = it.run || {};
    run.appendChild(el('h3', 'What the run decided (v to hide)'));
    run.appendChild(el('div', 'verdict ' + r.verdict + ', stage ' + r.failure_stage + '; this check: ' + r.check_outcome + (r.check_label ? ' (' + r.check_label + ')' : '') + ', decided by ' + r.decided_by));
    if (r.reason) run.appendChild(el('pre', r.reason));
    (r.evidence || []).forEach(function (e) { run.appendChild(el('div', e.kind + ': ' + e.message)); });
    (r.votes || []).forEach(function (v) { run.appendChild(el('div', v.judge + ': ' + (v.abstained ? 'abstained' : v.label) + (v.rationale ? ' (' + v.rationale + ')' : ''))); });
    main.appendChild(run);
    progress();
  }
  function choose(i) {
    var it = items[pos], lab = it.labels[i];
    if (!lab) return;
    state.labels[it.item_id] = lab; save();
    if (pos < items.length - 1) pos += 1;
    render();
  }
  function nextUnlabelled() {
    for (var k = 1; k <= items.length; k++) { var j = (pos + k) % items.length; if (!state.labels[items[j].item_id]) { pos = j; render(); return; } }
  }
  function exportLabels() {
    var msg = document.getElementById('msg');
    var who = (state.annotator || '').trim();
    if (!who) { msg.textContent = 'enter your annotator id first'; document.getElementById('annotator').focus(); return; }
    var lines = items.filter(function (it) { return state.labels[it.item_id]; }).map(function (it) {
      return JSON.stringify({item_id: it.item_id, label: state.labels[it.item_id], annotator: who, note: state.notes[it.item_id] || ''});
    });
    if (!lines.length) { msg.textContent = 'nothing labelled yet'; return; }
    var a = document.getElementById('download');
    a.href = 'data:application/x-ndjson;charset=utf-8,' + encodeURIComponent(lines.join('\n') + '\n');
    a.download = 'labels-' + who.replace(/[^A-Za-z0-9_.-]/g, '_') + '.jsonl';
    a.click();
    msg.textContent = 'exported ' + lines.length + ' labels as ' + a.download;
    document.body.setAttribute('data-exported', String(lines.length));
  }
  var who = document.getElementById('annotator');
  who.value = state.annotator || '';
  who.addEventListener('input', function () { state.annotator = who.value; save(); });
  document.getElementById('export').addEventListener('click', exportLabels);
  document.addEventListener('keydown', function (ev) {
    var tag = ev.target && ev.target.tagName;
    if (tag === 'TEXTAREA' || tag === 'INPUT') { if (ev.key === 'Escape') ev.target.blur(); return; }
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    var k = ev.key;
    if (k >= '1' && k <= '9') choose(Number(k) - 1);
    else if (k === 'n' || k === 'ArrowRight') { if (pos < items.length - 1) { pos += 1; render(); } }
    else if (k === 'p' || k === 'ArrowLeft') { if (pos > 0) { pos -= 1; render(); } }
    else if (k === 'u') nextUnlabelled();
    else if (k === 'v') { showRun = !showRun; document.getElementById('run').hidden = !showRun; }
    else if (k === 'x') exportLabels();
    else return;
    ev.preventDefault();
  });
  render();
  document.body.setAttribute('data-ready', '1');
})();
"""


def labelling_page(items: Sequence[LabelItem], *, title: str) -> str:
    """The page for a labelling set (``items`` in set order)."""
    payload = [it.model_dump(mode="json", exclude_none=True) for it in items]
    data = json.dumps(payload, ensure_ascii=False, sort_keys=True).replace("<", "\\u003c")
    set_id = content_hash(payload)[:16]
    e = html.escape
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        f"<title>label: {e(title)}</title><style>{_STYLE}</style></head>\n"
        f'<body data-set="{set_id}" data-items="{len(items)}">\n'
        f"<header><h1>{e(title)}</h1>"
        '<label>annotator <input id="annotator" size="14" autocomplete="off"></label>'
        '<span id="progress"></span><button id="export">export labels (x)</button><a id="download" hidden></a><span id="msg" class="msg"></span>'
        '<span class="keys">1-9 label · n/→ next · p/← previous · u next unlabelled · v run decision · x export · Esc leaves a text field</span></header>\n'
        '<main id="item"></main>\n'
        f'<script type="application/json" id="label-set">{data}</script>\n'
        f"<script>{_SCRIPT}</script>\n</body></html>\n"
    )
