/// The endpoints a coordinator bound, with the ports the OS chose for `:0` or `*`.
public struct CoordinatorEndpoints: Sendable, Codable, Equatable {
    public var submit: String
    public var publish: String
    public var sync: String

    public init(submit: String, publish: String, sync: String) {
        self.submit = submit
        self.publish = publish
        self.sync = sync
    }
}
