/// An error thrown from a ``Effect/run(priority:operation:catch:fileID:line:)`` effect that had no
/// `catch:` handler.
///
/// FlowKit never swallows these: the store logs each one and passes it to its
/// `onUnhandledEffectError` hook; the test store fails the test.
public struct EffectFailure: Error, Sendable, CustomStringConvertible {
    /// Where the failing effect was created.
    public struct Origin: Sendable, Hashable {
        // Kept as the literal: making a `String` for every `.run` would cost an allocation on the
        // hot path, for the rare effect that fails.
        @usableFromInline let file: StaticString
        public let line: UInt

        @inlinable
        init(fileID: StaticString, line: UInt) {
            self.file = fileID
            self.line = line
        }

        /// The file the effect was created in, as `Module/File.swift`.
        public var fileID: String { "\(file)" }

        public static func == (lhs: Origin, rhs: Origin) -> Bool {
            lhs.line == rhs.line && lhs.fileID == rhs.fileID
        }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(fileID)
            hasher.combine(line)
        }
    }

    /// The error the effect threw.
    public var error: any Error
    /// Where the effect was created.
    public var origin: Origin

    public var description: String {
        "An effect created at \(origin.fileID):\(origin.line) threw \(error) and has no catch: handler"
    }
}
