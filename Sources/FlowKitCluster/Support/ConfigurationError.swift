/// A configuration a coordinator or node cannot run with, found before it serves anyone.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    /// What is wrong and how to fix it.
    public var description: String

    public init(_ description: String) {
        self.description = description
    }
}
