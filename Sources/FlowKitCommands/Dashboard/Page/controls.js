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
