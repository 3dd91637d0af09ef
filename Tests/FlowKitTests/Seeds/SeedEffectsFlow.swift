import Dependencies
import FlowKit

/// The reducer cases of the seed "Effects", gathered in one flow so each pattern can be tested as
/// the seed writes it. Its clients are plain structs of closures that each test overrides.
struct SeedEffectsFlow: Flow {
    struct State: Equatable, Sendable {
        var isLoading = false
        var data: String?
        var item: String?
        var errorMessage: String?
        var saved = false
        var analyticsTracked = false
        var syncCompleted = false
        var count = 0
        var numberFact: String?
        var isOfflineMode = false
        var status: String?
    }

    enum Event: Equatable, Sendable {
        case loadData
        case didLoadData(Result<String, ClientError>)
        case view(View)
        case saveData
        case loadItem(Int)
        case itemLoaded(String)
        case loadFailed(ClientError)
        case syncData
        case syncCompleted
        case onAppear
        case trackAnalytics
        case onSave
        case delegate(Delegate)
        case numberFactButtonTapped
        case numberFactResponse(Result<String, ClientError>)
        case loadDataRespectingOfflineMode
        case dataLoaded(String)
        case statusChanged(String)

        enum View: Equatable, Sendable {
            case onTapSave
            case runTasks
        }

        enum Delegate: Equatable, Sendable {
            case didSave
        }
    }

    struct ClientError: Error, Equatable, Sendable {
        var message: String
    }

    @Dependency(SeedClients.self) var clients

    func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        // .run for Async Work
        case .loadData:
            state.isLoading = true
            return .run { send in
                let data = try await clients.fetchData()
                await send(.didLoadData(.success(data)))
            }

        case .didLoadData(.success(let data)):
            state.isLoading = false
            state.data = data
            return .none

        case .didLoadData(.failure(let error)):
            state.isLoading = false
            state.errorMessage = error.message
            return .none

        // .send for Synchronous Action Dispatch
        case .view(.onTapSave):
            return .send(.saveData)

        case .saveData:
            state.saved = true
            return .none

        // Effect Error Handling: surfaced
        case .loadItem(let id):
            return .run { send in
                let item = try await clients.fetchItem(id)
                await send(.itemLoaded(item))
            } catch: { error, send in
                await send(.loadFailed(error as? ClientError ?? ClientError(message: "\(error)")))
            }

        case .itemLoaded(let item):
            state.item = item
            return .none

        case .loadFailed(let error):
            state.errorMessage = error.message
            return .none

        // Effect Error Handling: report only
        case .syncData:
            return .run { send in
                try await clients.sync()
                await send(.syncCompleted)
            } catch: { error, _ in
                clients.reportIssue(error)
            }

        case .syncCompleted:
            state.syncCompleted = true
            return .none

        // .concatenate for Sequential Effects
        case .onAppear:
            return .concatenate(
                .send(.loadData),
                .send(.trackAnalytics)
            )

        case .trackAnalytics:
            state.analyticsTracked = true
            return .none

        // .merge for Concurrent Effects
        case .onSave:
            return .merge(
                .send(.delegate(.didSave)),
                .run { _ in await clients.dismiss() }
            )

        case .delegate(.didSave):
            state.saved = true
            return .none

        // Capturing for Async Work
        case .numberFactButtonTapped:
            state.isLoading = true
            return .run { [count = state.count] send in
                let fact = try await clients.fetchFact(count)
                await send(.numberFactResponse(.success(fact)))
            }

        case .numberFactResponse(.success(let fact)):
            state.isLoading = false
            state.numberFact = fact
            return .none

        case .numberFactResponse(.failure(let error)):
            state.isLoading = false
            state.errorMessage = error.message
            return .none

        // Capturing for Conditionals
        case .loadDataRespectingOfflineMode:
            return .run { [isOfflineMode = state.isOfflineMode] send in
                if isOfflineMode {
                    let data = await clients.loadFromCache()
                    await send(.dataLoaded(data))
                } else {
                    let data = try await clients.fetchData()
                    await send(.dataLoaded(data))
                }
            }

        case .dataLoaded(let data):
            state.data = data
            return .none

        // View Lifecycle Effects: .runTasks with .finish()
        case .view(.runTasks):
            return .run { send in
                for await status in clients.statusStream() {
                    await send(.statusChanged(status))
                }
            }

        case .statusChanged(let status):
            state.status = status
            return .none
        }
    }
}

/// The seed's clients: `apiClient`, `factClient`, `syncClient`, `cacheClient`, `statusClient`,
/// `dismiss` and `reportIssue`, as one overridable value.
struct SeedClients: TestDependencyKey, Sendable {
    var fetchData: @Sendable () async throws -> String = { "data" }
    var fetchItem: @Sendable (Int) async throws -> String = { "item \($0)" }
    var sync: @Sendable () async throws -> Void = {}
    var dismiss: @Sendable () async -> Void = {}
    var fetchFact: @Sendable (Int) async throws -> String = { "\($0) is a number" }
    var loadFromCache: @Sendable () async -> String = { "cached" }
    var statusStream: @Sendable () -> AsyncStream<String> = { AsyncStream { $0.finish() } }
    var reportIssue: @Sendable (any Error) -> Void = { _ in }

    static let testValue = SeedClients()
}
