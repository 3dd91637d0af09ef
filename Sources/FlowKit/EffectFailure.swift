/// An error thrown from a ``Effect/run(priority:operation:catch:fileID:line:)`` effect that had no
/// `catch:` handler.
///
/// FlowKit never swallows these: the store logs each one and passes it to its
/// `onUnhandledEffectError` hook; the test store fails the test.
public struct EffectFailure: Error, Sendable, CustomStringConvertible {
    /// Where the failing effect was created.
    public struct Origin: Sendable, Hashable {
        public var fileID: String
        public var line: UInt
    }

    /// The error the effect threw.
    public var error: any Error
    /// Where the effect was created.
    public var origin: Origin

    public var description: String {
        "An effect created at \(origin.fileID):\(origin.line) threw \(error) and has no catch: handler"
    }
}
