import FlowKit

// The clients the article "Effects" calls (`apiClient`, `syncClient`, `client`, `statusClient`,
// `factClient`, `searchClient`, `cacheClient`, `dismiss`, `loadInitialData`), declared the way a
// TCA user declares them: a struct of closures, a dependency key, a `DependencyValues` property.
// Tests override each one; unset, they fail the test.

struct APIClient: Sendable {
    var fetchData: @Sendable () async throws -> String
    var fetchItem: @Sendable (Int) async throws -> String
}

struct SyncClient: Sendable {
    var sync: @Sendable () async throws -> Void
}

struct StreamClient: Sendable {
    var stream: @Sendable () -> AsyncThrowingStream<String, any Error>
}

struct StatusClient: Sendable {
    var stream: @Sendable () -> AsyncStream<String>
}

struct FactClient: Sendable {
    var fetch: @Sendable (Int) async throws -> String
}

struct SearchClient: Sendable {
    var search: @Sendable (_ text: String, _ filter: String, _ sortOrder: String) async throws -> [String]

    func search(text: String, filter: String, sortOrder: String) async throws -> [String] {
        try await search(text, filter, sortOrder)
    }
}

struct CacheClient: Sendable {
    var loadFromCache: @Sendable () async -> String
}

struct DismissEffect: Sendable {
    var dismiss: @Sendable () async -> Void
    func callAsFunction() async { await dismiss() }
}

struct InitialDataLoader: Sendable {
    var load: @Sendable () async throws -> String
    func callAsFunction() async throws -> String { try await load() }
}

struct SampleError: Error, Equatable {
    var message: String
}

extension APIClient: TestDependencyKey {
    static let testValue = APIClient(
        fetchData: { reportIssue("apiClient.fetchData is not set"); throw SampleError(message: "unset") },
        fetchItem: { _ in reportIssue("apiClient.fetchItem is not set"); throw SampleError(message: "unset") }
    )
}

extension SyncClient: TestDependencyKey {
    static let testValue = SyncClient(sync: { reportIssue("syncClient.sync is not set") })
}

extension StreamClient: TestDependencyKey {
    static let testValue = StreamClient(stream: { reportIssue("client.stream is not set"); return AsyncThrowingStream { $0.finish() } })
}

extension StatusClient: TestDependencyKey {
    static let testValue = StatusClient(stream: { reportIssue("statusClient.stream is not set"); return AsyncStream { $0.finish() } })
}

extension FactClient: TestDependencyKey {
    static let testValue = FactClient(fetch: { _ in reportIssue("factClient.fetch is not set"); throw SampleError(message: "unset") })
}

extension SearchClient: TestDependencyKey {
    static let testValue = SearchClient(search: { _, _, _ in reportIssue("searchClient.search is not set"); return [] })
}

extension CacheClient: TestDependencyKey {
    static let testValue = CacheClient(loadFromCache: { reportIssue("cacheClient.loadFromCache is not set"); return "" })
}

extension DismissEffect: TestDependencyKey {
    static let testValue = DismissEffect(dismiss: { reportIssue("dismiss is not set") })
}

extension InitialDataLoader: TestDependencyKey {
    static let testValue = InitialDataLoader(load: { reportIssue("loadInitialData is not set"); return "" })
}

extension DependencyValues {
    var apiClient: APIClient {
        get { self[APIClient.self] }
        set { self[APIClient.self] = newValue }
    }
    var syncClient: SyncClient {
        get { self[SyncClient.self] }
        set { self[SyncClient.self] = newValue }
    }
    var client: StreamClient {
        get { self[StreamClient.self] }
        set { self[StreamClient.self] = newValue }
    }
    var statusClient: StatusClient {
        get { self[StatusClient.self] }
        set { self[StatusClient.self] = newValue }
    }
    var factClient: FactClient {
        get { self[FactClient.self] }
        set { self[FactClient.self] = newValue }
    }
    var searchClient: SearchClient {
        get { self[SearchClient.self] }
        set { self[SearchClient.self] = newValue }
    }
    var cacheClient: CacheClient {
        get { self[CacheClient.self] }
        set { self[CacheClient.self] = newValue }
    }
    var dismiss: DismissEffect {
        get { self[DismissEffect.self] }
        set { self[DismissEffect.self] = newValue }
    }
    var loadInitialData: InitialDataLoader {
        get { self[InitialDataLoader.self] }
        set { self[InitialDataLoader.self] = newValue }
    }
}
