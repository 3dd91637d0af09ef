import FlowKitCluster
import Foundation

/// Settings in the usual precedence: a command-line flag wins over an environment variable, which
/// wins over the config file, which wins over the default.
///
/// The config file is JSON with a section per process kind:
///
/// ```json
/// { "log-level": "info",
///   "coordinator": { "submit": "tcp://0.0.0.0:7400", "data-dir": "/var/lib/flowkit" },
///   "node": { "id": 1, "client": "tcp://0.0.0.0:7410", "coordinator-submit": "tcp://coordinator:7400" } }
/// ```
///
/// The environment variable for `coordinator.data-dir` is `FLOWKIT_COORDINATOR_DATA_DIR`; for a
/// top-level key such as `log-level`, `FLOWKIT_LOG_LEVEL`. `deploy/flowkit.json` documents every key.
package struct Settings: Sendable {
    private let file: [String: JSONValue]
    private let environment: [String: String]
    /// Where the file came from, for error messages.
    package let source: String?

    /// Loads the config file at `path`, or at `$FLOWKIT_CONFIG`, or none.
    package init(path: String?, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        self.environment = environment
        guard let path = path ?? environment["FLOWKIT_CONFIG"] else {
            file = [:]
            source = nil
            return
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SettingsError("cannot read the config file \(path): check the path and its permissions")
        }
        do {
            guard case .object(let object) = try JSONDecoder().decode(JSONValue.self, from: data) else {
                throw SettingsError("the config file \(path) must hold a JSON object")
            }
            file = object
        } catch let error as SettingsError {
            throw error
        } catch {
            throw SettingsError("the config file \(path) is not valid JSON: \(error)")
        }
        source = path
    }

    /// The value of `section.key` (or top-level `key` when `section` is nil), by precedence.
    package func string(_ section: String?, _ key: String, flag: String?) -> String? {
        if let flag { return flag }
        let variable = "FLOWKIT_" + ([section, key].compactMap { $0 }.joined(separator: "_"))
            .uppercased().replacingOccurrences(of: "-", with: "_")
        if let value = environment[variable] { return value }
        let container: [String: JSONValue]
        if let section {
            guard case .object(let object) = file[section] else { return nil }
            container = object
        } else {
            container = file
        }
        return container[key]?.flagText
    }

    package func int(_ section: String?, _ key: String, flag: Int?) throws -> Int? {
        guard let text = string(section, key, flag: flag.map(String.init)) else { return nil }
        guard let value = Int(text) else {
            throw SettingsError("\(describe(section, key)) must be a whole number; got \"\(text)\"")
        }
        return value
    }

    /// A duration written as milliseconds.
    package func milliseconds(_ section: String?, _ key: String, flag: Int?) throws -> Duration? {
        try int(section, key, flag: flag).map { .milliseconds($0) }
    }

    private func describe(_ section: String?, _ key: String) -> String {
        [section, key].compactMap { $0 }.joined(separator: ".")
    }
}

package struct SettingsError: Error, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}
