"use strict";
// The page's whole state, built from the monitor's JSON lines (docs/DASHBOARD.md).
const view = { status: null, head: 0, entries: [], alarms: [], rates: [], names: {}, watched: null, bench: null };
const $ = (id) => document.getElementById(id);

// What changed since the last redraw: only those parts are drawn again.
const stale = new Set(["status", "entries", "alarms", "bench"]);

function apply(event) {
  stale.add(event.type === "entry" ? "entries" : event.type === "alarm" ? "alarms" : event.type);
  switch (event.type) {
    case "status":
      view.status = event.status;
      view.head = Math.max(view.head, event.status.head);
      for (const node of event.status.nodes) view.names[node.id] = node.name;
      view.rates.push(event.status.entriesPerSecond);
      if (view.rates.length > 120) view.rates.shift();
      break;
    case "heartbeat":
      view.head = Math.max(view.head, event.head);
      break;
    case "entry":
      // The log's seqs only grow: one already shown is a replay.
      if (view.entries.length > 0 && event.seq <= view.entries[view.entries.length - 1].seq) break;
      view.entries.push(event);
      if (view.entries.length > 500) view.entries.shift();
      view.head = Math.max(view.head, event.seq);
      if (view.watched && event.address === view.watched) refreshState();
      break;
    case "alarm":
      view.alarms.unshift(event.alarm);
      if (view.alarms.length > 20) view.alarms.pop();
      break;
    case "bench":
      applyBench(event);
      break;
  }
}

// A bench's seconds arrive in order: (step, elapsed, phase) only grows within a run, so a
// line that does not move it forward is a replay.
const phases = ["warm-up", "measuring", "checking", "done"];
function applyBench(event) {
  if (!view.bench || view.bench.run !== event.run) view.bench = { run: event.run, seconds: [], last: null };
  const last = view.bench.last;
  const key = [event.step, event.elapsed, phases.indexOf(event.phase)];
  if (last && !greater(key, [last.step, last.elapsed, phases.indexOf(last.phase)])) return;
  view.bench.last = event;
  if (event.phase === "done") return;
  view.bench.seconds.push(event);
  if (view.bench.seconds.length > 300) view.bench.seconds.shift();
}
function greater(a, b) {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] > b[i];
  return false;
}

function cell(row, text, className) {
  const td = row.insertCell();
  td.textContent = text;
  if (className) td.className = className;
  return td;
}
