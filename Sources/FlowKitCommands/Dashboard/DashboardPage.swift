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

    /// One script, in three parts (each in a file of its own): served as `/dashboard.js`.
    static let script = [modelScript, viewsScript, controlsScript].joined(separator: "\n\n")

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
