function render() {
  const status = view.status;
  $("head").textContent = view.head;
  const parts = new Set(stale);
  stale.clear();
  if (parts.has("alarms")) renderAlarms();
  if (parts.has("entries")) renderEntries();
  if (parts.has("bench")) renderBench();
  if (!parts.has("status")) return;
  $("rate").textContent = status ? Math.round(status.entriesPerSecond) : "–";
  $("epoch").textContent = status ? status.epoch : "–";
  $("divergences").textContent = status ? status.divergences : "–";
  $("divergences").className = status && status.divergences > 0 ? "bad" : "";
  $("takeovers").textContent = status ? (status.takeovers || 0) : "–";
  $("leader").textContent = status && status.replication ? status.replication.leader : "one coordinator";
  renderNodes(status ? status.nodes : []);
  renderCoordinators(status && status.replication);
  renderVersions(status && status.versions);
  renderRates();
}

function renderNodes(nodes) {
  const body = $("nodes").tBodies[0];
  body.replaceChildren();
  // Digests compare at the same seq only: a node behind holds an earlier state.
  const digestsAt = {};
  // A digestSeq of 0 is a busy node's digest still being brought up to date: no one seq.
  for (const node of nodes) if (node.alive && node.digestSeq > 0) (digestsAt[node.digestSeq] ||= new Set()).add(node.digest);
  const maxLag = Math.max(1, ...nodes.map((node) => node.lag));
  for (const node of nodes) {
    const row = body.insertRow();
    row.dataset.node = node.name;
    row.dataset.alive = node.alive;
    row.dataset.applied = node.applied;
    cell(row, node.name);
    cell(row, node.applied);
    const lag = cell(row, "");
    const bar = document.createElement("span");
    bar.className = "bar";
    bar.style.width = (node.lag === 0 ? 0 : Math.max(2, (node.lag / maxLag) * 120)) + "px";
    lag.append(String(node.lag), " ", bar);
    const state = !node.alive ? "down" : node.unreadable ? "upgrade" : node.stalled ? "stalled" : "alive";
    cell(row, state, state === "alive" ? "good" : "bad");
    cell(row, node.instances);
    cell(row, node.runningEffects);
    cell(row, node.ownedInstances || 0);
    const differs = node.alive && node.digestSeq > 0 && digestsAt[node.digestSeq].size > 1;
    const note = differs ? "  differs at seq " + node.digestSeq : node.digestSeq === 0 ? "  (being hashed)" : "";
    cell(row, node.digest.slice(0, 16) + note, differs ? "bad" : "digest");
  }
}

function renderCoordinators(replication) {
  $("coordinators-section").hidden = !replication;
  if (!replication) return;
  const body = $("coordinators").tBodies[0];
  body.replaceChildren();
  for (const coordinator of replication.coordinators) {
    const row = body.insertRow();
    cell(row, coordinator.id);
    cell(row, coordinator.role);
    cell(row, coordinator.inSync ? "yes" : "NO", coordinator.inSync ? "good" : "bad");
    cell(row, coordinator.durable);
    cell(row, coordinator.lag);
  }
}

function renderVersions(versions) {
  $("versions-section").hidden = !versions;
  if (!versions) return;
  const body = $("versions").tBodies[0];
  body.replaceChildren();
  for (const flow of Object.keys(versions).sort()) {
    const version = versions[flow];
    const row = body.insertRow();
    row.dataset.flow = flow;
    cell(row, flow);
    cell(row, version.agreed);
    cell(row, version.newest, version.newest > version.agreed ? "bad" : "good");
    cell(row, version.behind.join(", ") || "–");
  }
}

function renderAlarms() {
  const list = $("alarms");
  list.replaceChildren();
  if (view.alarms.length === 0) {
    const none = document.createElement("li");
    none.className = "none";
    none.textContent = "none";
    list.append(none);
  }
  for (const alarm of view.alarms) {
    const item = document.createElement("li");
    item.className = "bad";
    item.textContent = alarm.kind + ": " + alarm.message;
    list.append(item);
  }
}

function renderEntries() {
  const filter = $("filter").value.trim();
  const matches = (entry) => !filter || entry.address === filter || entry.address.startsWith(filter.endsWith("/") ? filter : filter + "/");
  const body = $("entries").tBodies[0];
  body.replaceChildren();
  for (const entry of view.entries.filter(matches).slice(-50).reverse()) {
    const row = body.insertRow();
    row.dataset.seq = entry.seq;
    cell(row, entry.seq);
    cell(row, entry.address);
    const what = entry.kind === "event" ? JSON.stringify(entry.payload)
      : entry.kind === "cancel" ? "cancel " + entry.payload + (entry.cancelIDType ? " (" + entry.cancelIDType + ")" : "")
      : entry.kind === "cancelAll" ? "cancel every effect"
      : entry.kind === "takeover" ? "takeover: effects of " + processName(entry.from) + " move to " + processName(entry.to)
      : "quarantined: skipped by every replica";
    cell(row, what.length > 100 ? what.slice(0, 100) + "…" : what, "payload");
    const origin = cell(row, entry.origin === 0 ? "coordinator" : view.names[entry.origin] || "node " + entry.origin);
    // The session tells a restarted node's entries from its previous process's.
    if (entry.origin !== 0) origin.title = "session " + (entry.session || "?");
  }
}

// A node process: its node's name and the start of its session.
function processName(process) {
  if (!process) return "?";
  return (view.names[process.node] || "node " + process.node) + " " + process.session.slice(0, 8);
}

function renderRates() {
  const canvas = $("rates");
  const context = canvas.getContext("2d");
  context.clearRect(0, 0, canvas.width, canvas.height);
  const top = Math.max(1, ...view.rates);
  const step = canvas.width / 120;
  context.fillStyle = "#4f7cac";
  view.rates.forEach((rate, index) => {
    const height = (rate / top) * (canvas.height - 16);
    context.fillRect(index * step, canvas.height - height, Math.max(1, step - 1), height);
  });
  context.fillStyle = "#666";
  context.fillText(Math.round(top) + "/s", 4, 12);
}

const count = (value) => Math.round(value).toLocaleString("en-US");
const millis = (micros) => (micros / 1000).toFixed(micros < 10000 ? 2 : 1);

function renderBench() {
  $("bench-section").hidden = !view.bench;
  const last = view.bench && view.bench.last;
  if (!last) return;
  const done = last.phase === "done";
  $("bench-title").textContent = "run " + last.run + ", step " + last.step + ", " + count(last.rate) + " events/s offered, "
    + (done ? "done: the end check " + (last.passed ? "passed" : "FAILED") + " (figures over the measured window)"
            : last.phase + " " + last.elapsed.toFixed(0) + " s (figures over the last second)");
  $("bench-title").className = done && !last.passed ? "bad" : "";
  for (const [id, figures] of [["bench-ordered", last.ordered], ["bench-applied", last.applied]]) {
    const row = $(id);
    while (row.cells.length > 1) row.deleteCell(1);
    for (const value of [figures.p50, figures.p90, figures.p99, figures.p999, figures.max]) cell(row, millis(value));
    cell(row, count(figures.count));
  }
  $("bench-rates").textContent = "ordered " + count(last.orderedPerSecond) + "/s, applied on every node " + count(last.appliedPerSecond)
    + "/s, lag " + count(last.lag) + "; sent " + count(last.sent) + " of " + count(last.offered) + " due, " + count(last.acknowledged) + " acknowledged";
  drawSeries($("bench-latency"), view.bench.seconds, [
    { label: "ordered p50", color: "#4f7cac", value: (second) => second.ordered.p50 / 1000 },
    { label: "ordered p99", color: "#f59e0b", value: (second) => second.ordered.p99 / 1000 },
    { label: "applied p99", color: "#b91c1c", value: (second) => second.applied.p99 / 1000 },
  ], " ms");
  drawSeries($("bench-throughput"), view.bench.seconds, [
    { label: "ordered/s", color: "#047857", value: (second) => second.orderedPerSecond },
  ], "/s");
}

// Lines over the bench's seconds, one per series, on a shared scale from zero.
function drawSeries(canvas, seconds, series, unit) {
  const context = canvas.getContext("2d");
  context.clearRect(0, 0, canvas.width, canvas.height);
  const top = Math.max(0.001, ...seconds.flatMap((second) => series.map((line) => line.value(second))));
  const step = canvas.width / Math.max(30, seconds.length);
  const y = (value) => canvas.height - 4 - (value / top) * (canvas.height - 22);
  series.forEach((line, index) => {
    context.strokeStyle = line.color;
    context.lineWidth = 2;
    context.beginPath();
    seconds.forEach((second, at) => (at === 0 ? context.moveTo : context.lineTo).call(context, at * step, y(line.value(second))));
    context.stroke();
    context.fillStyle = line.color;
    context.fillText(line.label, 120 + index * 110, 12);
  });
  context.fillStyle = "#666";
  context.fillText((top < 10 ? top.toFixed(2) : Math.round(top).toLocaleString("en-US")) + unit, 4, 12);
}
