/// The dashboard's page, script and style, served from the binary: nothing is fetched from
/// anywhere else, so it works offline and behind any firewall.
enum DashboardPage {
    static let html = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>FlowKit cluster</title>
        <link rel="stylesheet" href="/dashboard.css">
        <link rel="icon" href="data:,">
        </head>
        <body>
        <header>
          <h1>FlowKit cluster</h1>
          <span id="connection" data-state="connecting">connecting…</span>
          <span id="curve"></span>
        </header>
        <section id="summary">
          <div><label>head</label><b id="head">–</b></div>
          <div><label>entries/s</label><b id="rate">–</b></div>
          <div><label>epoch</label><b id="epoch">–</b></div>
          <div><label>leader</label><b id="leader">–</b></div>
          <div><label>divergences</label><b id="divergences">–</b></div>
        </section>
        <section class="columns" id="controls">
          <div>
            <h2>One instance</h2>
            <form id="state-form"><input id="state-address" placeholder="counter/a"><button>watch</button></form>
            <pre id="state">–</pre>
          </div>
          <div>
            <h2>Emit and cancel</h2>
            <form id="emit-form">
              <input id="emit-address" placeholder="counter/a">
              <input id="emit-event" placeholder='{"increment":{}}'>
              <select id="emit-node"></select>
              <button>emit</button>
            </form>
            <form id="cancel-form">
              <input id="cancel-address" placeholder="timer/kitchen">
              <input id="cancel-id" placeholder="cancel id (empty: every effect)">
              <button>cancel</button>
            </form>
            <pre id="result"></pre>
          </div>
        </section>
        <section>
          <h2>Entries per second, the last two minutes</h2>
          <canvas id="rates" width="960" height="110"></canvas>
        </section>
        <section id="bench-section" hidden>
          <h2>Bench: <span id="bench-title"></span></h2>
          <table id="bench">
            <thead><tr><th>latency, ms</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th><th>events</th></tr></thead>
            <tbody>
              <tr id="bench-ordered"><th>to ordered</th></tr>
              <tr id="bench-applied"><th>to applied on every node</th></tr>
            </tbody>
          </table>
          <p id="bench-rates"></p>
          <canvas id="bench-latency" width="960" height="130"></canvas>
          <canvas id="bench-throughput" width="960" height="70"></canvas>
        </section>
        <section>
          <h2>Nodes</h2>
          <table id="nodes">
            <thead><tr><th>node</th><th>applied</th><th title="entries behind the head when the node last reported">lag at report</th><th>state</th><th>instances</th><th>effects running</th><th>digest</th></tr></thead>
            <tbody></tbody>
          </table>
          <p class="note" id="nodes-note">Nodes report once a second: <b>applied</b> and <b>lag at report</b> are as of
            each node's last report (lag: how many entries it was behind the head then), not of this moment. A node
            silent for 3 s counts as down.</p>
        </section>
        <section id="coordinators-section" hidden>
          <h2>Coordinators</h2>
          <table id="coordinators">
            <thead><tr><th>coordinator</th><th>role</th><th>in sync</th><th>durable</th><th>lag</th></tr></thead>
            <tbody></tbody>
          </table>
        </section>
        <section>
          <h2>Alarms</h2>
          <ul id="alarms"><li class="none">none</li></ul>
        </section>
        <section>
          <h2>Latest entries</h2>
          <input id="filter" placeholder="filter: flow or flow/key">
          <table id="entries">
            <thead><tr><th>seq</th><th>address</th><th>event</th><th>origin</th></tr></thead>
            <tbody></tbody>
          </table>
        </section>
        <script src="/dashboard.js"></script>
        </body>
        </html>
        """#

    static let script = #"""
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
          $("leader").textContent = status && status.replication ? status.replication.leader : "one coordinator";
          renderNodes(status ? status.nodes : []);
          renderCoordinators(status && status.replication);
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
            const state = !node.alive ? "down" : node.stalled ? "stalled" : "alive";
            cell(row, state, state === "alive" ? "good" : "bad");
            cell(row, node.instances);
            cell(row, node.runningEffects);
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
              : entry.kind === "cancelAll" ? "cancel every effect" : "quarantined: skipped by every replica";
            cell(row, what.length > 100 ? what.slice(0, 100) + "…" : what, "payload");
            cell(row, view.names[entry.origin] || "node " + entry.origin);
          }
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

        // A refusal is {"error":{"message":…}}: the message is what the page shows.
        async function call(path, body) {
          const response = await fetch(path, body ? { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) } : {});
          const text = await response.text();
          if (!response.ok) {
            let message = text || response.statusText;
            try { message = JSON.parse(text).error.message || message; } catch (_) {}
            throw new Error(message);
          }
          return JSON.parse(text);
        }

        async function refreshState() {
          if (!view.watched) return;
          try {
            const state = await call("/api/state?address=" + encodeURIComponent(view.watched));
            $("state").textContent = view.watched + " after seq " + state.lastSeq + "\n" + JSON.stringify(state.state, null, 2);
          } catch (error) {
            $("state").textContent = error.message;
          }
        }

        function show(result) {
          $("result").textContent = result;
        }

        $("state-form").addEventListener("submit", (event) => {
          event.preventDefault();
          view.watched = $("state-address").value.trim() || null;
          refreshState();
        });
        $("emit-form").addEventListener("submit", async (event) => {
          event.preventDefault();
          try {
            const ordered = await call("/api/emit", { address: $("emit-address").value.trim(), event: $("emit-event").value, node: $("emit-node").value || null });
            show("ordered at seq " + ordered.seq + " (epoch " + ordered.epoch + ")");
          } catch (error) {
            show("refused: " + error.message);
          }
        });
        $("cancel-form").addEventListener("submit", async (event) => {
          event.preventDefault();
          try {
            const id = $("cancel-id").value.trim();
            const ordered = await call("/api/cancel", { address: $("cancel-address").value.trim(), id: id || null, node: $("emit-node").value || null });
            show("cancel ordered at seq " + ordered.seq);
          } catch (error) {
            show("refused: " + error.message);
          }
        });
        $("filter").addEventListener("input", renderEntries);

        // Redrawn at most four times a second, however fast the lines come: a page open costs
        // the machine (and the cluster sharing it) little.
        let dirty = false;
        function changed() {
          if (dirty) return;
          dirty = true;
          setTimeout(() => { dirty = false; render(); }, 250);
        }

        function connect() {
          const socket = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/live");
          socket.onopen = () => {
            // The socket replays where things stand first: alarms start over (entries skip what was shown).
            view.alarms = [];
            $("connection").textContent = "live";
            $("connection").dataset.state = "live";
          };
          // A message carries one or more JSON lines.
          socket.onmessage = (message) => {
            for (const line of message.data.split("\n")) apply(JSON.parse(line));
            changed();
          };
          socket.onclose = () => {
            $("connection").textContent = "disconnected, retrying…";
            $("connection").dataset.state = "disconnected";
            setTimeout(connect, 1000);
          };
        }

        async function start() {
          try {
            const info = await call("/api/info");
            for (const name of info.nodes) $("emit-node").add(new Option(name, name));
            $("curve").textContent = info.curve || "";
            // Where things stand, before the live lines: a page that cannot open a WebSocket still shows it.
            for (const event of await call("/api/snapshot")) apply(event);
            render();
          } catch (error) {
            show("could not reach the dashboard: " + error.message);
          }
          connect();
        }
        start();
        """#

    static let style = #"""
        :root { font-family: system-ui, sans-serif; color: #1d232a; background: #f6f7f9; }
        body { margin: 0 auto; max-width: 1100px; padding: 0 16px 32px; }
        header { display: flex; align-items: baseline; gap: 16px; }
        h1 { font-size: 1.4em; margin: 16px 0 8px; }
        h2 { font-size: 1em; margin: 20px 0 6px; color: #4b5563; }
        #connection { font-size: 0.85em; padding: 2px 8px; border-radius: 8px; background: #e5e7eb; }
        #connection[data-state="live"] { background: #d1fae5; color: #065f46; }
        #connection[data-state="disconnected"] { background: #fee2e2; color: #991b1b; }
        #curve { font-size: 0.85em; color: #6b7280; }
        #summary { display: flex; gap: 12px; flex-wrap: wrap; }
        #summary div { background: white; border-radius: 8px; padding: 8px 16px; min-width: 110px; box-shadow: 0 1px 2px #0001; }
        #summary label { display: block; font-size: 0.8em; color: #6b7280; }
        #summary b { font-size: 1.5em; font-variant-numeric: tabular-nums; }
        canvas { width: 100%; background: white; border-radius: 8px; box-shadow: 0 1px 2px #0001; }
        table { width: 100%; border-collapse: collapse; background: white; border-radius: 8px; box-shadow: 0 1px 2px #0001; font-variant-numeric: tabular-nums; }
        th, td { text-align: left; padding: 4px 10px; border-bottom: 1px solid #eef0f3; font-size: 0.9em; }
        th { color: #6b7280; font-weight: 600; }
        td.payload, td.digest { font-family: ui-monospace, monospace; font-size: 0.85em; }
        .bar { display: inline-block; height: 8px; background: #f59e0b; border-radius: 4px; vertical-align: middle; }
        .good { color: #047857; }
        .bad { color: #b91c1c; font-weight: 600; }
        ul { background: white; border-radius: 8px; margin: 0; padding: 8px 28px; box-shadow: 0 1px 2px #0001; }
        li.none { color: #9ca3af; list-style: none; margin-left: -16px; }
        input, select, button { font: inherit; padding: 4px 8px; margin: 2px 4px 2px 0; }
        #filter { margin-bottom: 6px; width: 260px; }
        #bench tbody th { font-weight: 500; color: #1d232a; }
        #bench-rates { margin: 6px 0; font-size: 0.9em; color: #4b5563; }
        #bench-section canvas { margin-top: 6px; }
        .columns { display: grid; grid-template-columns: 1fr 1fr; gap: 24px; }
        .note { color: #666; font-size: 0.85em; margin: 4px 0 0; }
        pre { background: white; border-radius: 8px; padding: 8px 12px; min-height: 2em; box-shadow: 0 1px 2px #0001; white-space: pre-wrap; max-height: 12em; overflow: auto; }
        """#
}
