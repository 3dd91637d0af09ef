import FlowKitCluster
import Foundation

/// Writes a line to standard error, where diagnostics go; standard output is for results.
package func printError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}

/// Writes a line to standard output and flushes it at once, so a parent process reading a pipe
/// sees it now (READY lines, JSON lines).
package func printFlushed(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// Encodes a value as one line of JSON with sorted keys.
package func jsonLine(_ value: some Encodable) -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return (try? String(decoding: encoder.encode(value), as: UTF8.self)) ?? "{}"
}

/// Pretty-prints JSON bytes, or returns them as text if they are not JSON.
package func prettyJSON(_ bytes: [UInt8]) -> String {
    guard let value = try? JSONValue(parsing: bytes) else { return String(decoding: bytes, as: UTF8.self) }
    return value.text(pretty: true)
}
