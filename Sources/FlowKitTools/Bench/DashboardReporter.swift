import FlowKitCommands
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Sends a running bench's seconds to a web dashboard (`POST /api/bench`, one ``BenchLive`` each),
/// so the page shows the latency percentiles and throughput live.
///
/// Never in the load's way: lines go out from a task of their own, at most one request in flight;
/// behind a slow request, only the newest 8 lines wait. A dashboard that does
/// not answer costs a note on stderr, once, and the bench goes on.
final class DashboardReporter: Sendable {
    let url: URL
    /// The dashboard's token, sent as `Authorization: Bearer` (docs/SECURITY.md, "The dashboard").
    let token: String?
    private let session: URLSession
    private let waiting: AsyncStream<BenchLive>.Continuation
    private let sending: Task<Void, Never>

    /// - Parameters:
    ///   - dashboard: The dashboard's page URL, e.g. `http://127.0.0.1:7480/`, or the URL it printed,
    ///     with `?token=…`.
    ///   - token: Its token, when the URL does not carry it.
    init?(dashboard: String, token: String? = nil) {
        guard let components = URLComponents(string: dashboard), let base = components.url, base.scheme == "http" || base.scheme == "https",
            let url = URL(string: "api/bench", relativeTo: base)?.absoluteURL
        else { return nil }
        let token = token ?? components.queryItems?.first { $0.name == "token" }?.value
        self.url = url
        self.token = token
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 2
        let session = URLSession(configuration: configuration)
        self.session = session
        let (lines, waiting) = AsyncStream.makeStream(of: BenchLive.self, bufferingPolicy: .bufferingNewest(8))
        self.waiting = waiting
        sending = Task {
            var warned = false
            for await line in lines {
                do {
                    try await Self.post(line, to: url, token: token, session: session)
                } catch {
                    if !warned {
                        warned = true
                        printError("note: the dashboard at \(url.absoluteString) did not take the bench's figures (\(error)); the bench goes on")
                    }
                }
            }
        }
    }

    func report(_ line: BenchLive) {
        waiting.yield(line)
    }

    /// Sends what is waiting, then stops.
    func close() async {
        waiting.finish()
        await sending.value
        session.finishTasksAndInvalidate()
    }

    private static func post(_ line: BenchLive, to url: URL, token: String?, session: URLSession) async throws {
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        if let token { request.setValue("Bearer " + token, forHTTPHeaderField: "Authorization") }
        request.httpBody = try JSONEncoder().encode(line)
        let (body, response) = try await session.data(for: request)
        guard let status = (response as? HTTPURLResponse)?.statusCode, (200..<300).contains(status) else {
            let code = (response as? HTTPURLResponse)?.statusCode ?? 0
            throw DashboardRefusal(description: "HTTP \(code): \(String(decoding: body.prefix(300), as: UTF8.self))")
        }
    }

    private struct DashboardRefusal: Error, CustomStringConvertible {
        var description: String
    }
}
