@testable import FlowKitCluster
import NIOSSL
import Testing

/// The etcd client's endpoints as it reads them (requests to a real etcd: the integration tests'
/// `ElectionTests`).
@Suite struct EtcdClientTests {
    @Test func endpointsAreHTTPOrHTTPSURLsWithAPort() throws {
        let plain = try EtcdEndpoint(parsing: "http://127.0.0.1:2379")
        #expect(!plain.tls && plain.host == "127.0.0.1" && plain.port == 2379)
        #expect(plain.description == "http://127.0.0.1:2379")

        let tls = try EtcdEndpoint(parsing: "https://etcd-0.etcd.flowkit.svc:2379/")
        #expect(tls.tls && tls.host == "etcd-0.etcd.flowkit.svc" && tls.port == 2379)
        #expect(tls.description == "https://etcd-0.etcd.flowkit.svc:2379")

        // No scheme: plain HTTP. An IPv6 address keeps its brackets, as a URL needs them.
        #expect(try EtcdEndpoint(parsing: "localhost:2379").description == "http://localhost:2379")
        let v6 = try EtcdEndpoint(parsing: "https://[::1]:2379")
        #expect(v6.tls && v6.host == "[::1]" && v6.description == "https://[::1]:2379")
    }

    @Test(arguments: ["http://127.0.0.1", "127.0.0.1:0", "http://127.0.0.1:65536", ":2379", "unix://etcd.sock:1", "http://127.0.0.1:2379/v3", "https://"])
    func whatIsNotAnEndpointIsRefused(_ endpoint: String) {
        #expect(throws: ConfigurationError.self) { try EtcdEndpoint(parsing: endpoint) }
    }

    @Test func aClientTakesEveryEndpointAndStartsWithTheFirst() throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        let client = try EtcdClient(endpoints: ["https://etcd-a:2379", "http://etcd-b:2379"], timeout: .seconds(1), tlsConfiguration: tls)
        #expect(client.endpoints.map(\.description) == ["https://etcd-a:2379", "http://etcd-b:2379"])
        #expect(client.current == client.endpoints[0])
        #expect(client.tlsConfiguration?.minimumTLSVersion == .tlsv12)
        #expect(throws: ConfigurationError.self) { try EtcdClient(endpoints: []) }
    }
}
