#if canImport(Glibc)
import Glibc
#endif
import FlowKitProcesses
import Foundation

/// A page in headless Chromium, driven over the DevTools protocol the way a person would use it:
/// fields filled, forms submitted, and what the page then shows read back from its DOM.
///
/// Chromium runs as a child of the test (its own profile, a DevTools port chosen by the OS); the
/// protocol runs over a WebSocket to the page. Expressions run in the page, as its script does.
final class DevToolsPage: @unchecked Sendable {
    private var socket: TestWebSocket.Connection
    private var nextID = 1

    private init(socket: TestWebSocket.Connection) {
        self.socket = socket
    }

    /// Opens `url` in a fresh headless Chromium and runs `body` with the page; Chromium is stopped
    /// on every path. `arguments` go to Chromium too (`--host-resolver-rules=…`).
    static func open(
        _ url: String, chromium: String, directory: String, runner: CommandRunner, arguments: [String] = [],
        _ body: @escaping @Sendable (DevToolsPage) async throws -> Void
    ) async throws {
        let profile = directory + "/chromium-devtools-\(UInt32.random(in: 0...UInt32.max))"
        let process = try ChildProcess.testChild(
            executable: chromium,
            arguments: [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--user-data-dir=\(profile)",
                "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "--remote-allow-origins=ws://127.0.0.1", "--window-size=1200,1500",
            ] + arguments + [url],
            name: "chromium-devtools", directory: directory
        )
        do {
            // Chromium writes the port it chose to the profile's DevToolsActivePort.
            let port = try await eventually("Chromium's DevTools port", timeout: .seconds(30), every: .milliseconds(100)) {
                (try? String(contentsOfFile: profile + "/DevToolsActivePort", encoding: .utf8))?.split(separator: "\n").first.flatMap { Int($0) }
            }
            let socket = try await eventually("the page's DevTools socket", timeout: .seconds(30), every: .milliseconds(200)) { () -> String? in
                let list = try await runner.run("/usr/bin/curl", ["-sS", "http://127.0.0.1:\(port)/json/list"])
                let targets = (try? JSONSerialization.jsonObject(with: Data(list.stdout.utf8))) as? [[String: Any]] ?? []
                return targets.first { $0["type"] as? String == "page" }?["webSocketDebuggerUrl"] as? String
            }
            try await TestWebSocket.connect(socket) { connection in
                try await body(DevToolsPage(socket: connection))
            }
        } catch {
            await process.stop()
            throw error
        }
        await process.stop()
    }

    /// Runs `expression` in the page (a promise is awaited) and returns its value as JSON text.
    ///
    /// - Throws: ``HarnessError`` with the page's exception when it throws.
    @discardableResult
    func evaluate(_ expression: String) async throws -> String {
        let result = try await call("Runtime.evaluate", ["expression": expression, "returnByValue": true, "awaitPromise": true])
        if let exception = result["exceptionDetails"] as? [String: Any] {
            throw HarnessError("the page threw on `\(expression)`: \(exception)")
        }
        let value = (result["result"] as? [String: Any])?["value"]
        guard let value else { return "null" }
        let data = try JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed])
        return String(decoding: data, as: UTF8.self)
    }

    /// Sends one DevTools command and returns its result.
    @discardableResult
    private func call(_ method: String, _ parameters: [String: Any]) async throws -> [String: Any] {
        let id = nextID
        nextID += 1
        let command: [String: Any] = ["id": id, "method": method, "params": parameters]
        try await socket.send(text: String(decoding: try JSONSerialization.data(withJSONObject: command), as: UTF8.self))
        while let line = try await socket.receiveText() {
            guard let reply = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], reply["id"] as? Int == id
            else { continue }  // an event, or another reply
            if let error = reply["error"] as? [String: Any] { throw HarnessError("DevTools refused \(method): \(error)") }
            return reply["result"] as? [String: Any] ?? [:]
        }
        throw HarnessError("the DevTools socket closed")
    }

    /// Where the element is on the page now: its bounding box's top-left and centre, in CSS pixels.
    func position(of selector: String) async throws -> (top: Double, left: Double, x: Double, y: Double) {
        let quoted = String(decoding: try JSONSerialization.data(withJSONObject: selector, options: [.fragmentsAllowed]), as: UTF8.self)
        let json = try await evaluate(
            "(() => { const r = document.querySelector(\(quoted)).getBoundingClientRect(); "
                + "return [r.top + window.scrollY, r.left, r.left + r.width / 2, r.top + r.height / 2]; })()"
        )
        let values = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [Double] ?? []
        guard values.count == 4 else { throw HarnessError("no element \(selector) on the page: \(json)") }
        return (values[0], values[1], values[2], values[3])
    }

    /// Clicks the element with the mouse, as a person does: the button goes down at its centre,
    /// stays down for `holding`, and comes up where the pointer is then. If the element moved
    /// meanwhile, the click lands elsewhere (or nowhere), as it would for a person.
    func click(_ selector: String, holding: Duration) async throws {
        let (_, _, x, y) = try await position(of: selector)
        try await call("Input.dispatchMouseEvent", ["type": "mouseMoved", "x": x, "y": y])
        try await call("Input.dispatchMouseEvent", ["type": "mousePressed", "x": x, "y": y, "button": "left", "clickCount": 1])
        try await Task.sleep(for: holding)
        try await call("Input.dispatchMouseEvent", ["type": "mouseReleased", "x": x, "y": y, "button": "left", "clickCount": 1])
    }

    /// Evaluates `expression` until it returns a string (not `null`), and returns that string.
    func waitFor(_ what: String, _ expression: String, timeout: Duration = .seconds(30)) async throws -> String {
        try await eventually(what, timeout: timeout, every: .milliseconds(200)) {
            let value = try await self.evaluate(expression)
            guard value != "null", let string = try JSONSerialization.jsonObject(with: Data(value.utf8), options: [.fragmentsAllowed]) as? String
            else { return nil }
            return string
        }
    }
}
