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
        let id = nextID
        nextID += 1
        let command: [String: Any] = [
            "id": id, "method": "Runtime.evaluate",
            "params": ["expression": expression, "returnByValue": true, "awaitPromise": true],
        ]
        let text = String(decoding: try JSONSerialization.data(withJSONObject: command), as: UTF8.self)
        try await socket.send(text: text)
        while let line = try await socket.receiveText() {
            guard let reply = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], reply["id"] as? Int == id
            else { continue }  // an event, or another reply
            let result = reply["result"] as? [String: Any]
            if let exception = result?["exceptionDetails"] as? [String: Any] {
                throw HarnessError("the page threw on `\(expression)`: \(exception)")
            }
            let value = (result?["result"] as? [String: Any])?["value"]
            guard let value else { return "null" }
            let data = try JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed])
            return String(decoding: data, as: UTF8.self)
        }
        throw HarnessError("the DevTools socket closed")
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
