import FlowKitProcesses

extension ChildProcess {
    /// A child of a test: `executable` with `arguments`, its output in `directory`, killed by the
    /// kernel if the test process dies, and without the developer's `FLOWKIT_*` variables, so a
    /// config file or log level set in a shell does not change what the tests run.
    static func testChild(
        executable: String, arguments: [String], name: String, directory: String, environment: [String: String] = [:], namespace: String? = nil
    ) throws -> ChildProcess {
        try spawn(
            executable: executable, arguments: arguments, name: name, directory: directory, environment: environment,
            inheritingFlowKitVariables: false, namespace: namespace
        )
    }
}

/// A harness failure with a message that says what happened.
struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
