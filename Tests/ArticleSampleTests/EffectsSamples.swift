import FlowKit

// Every code sample of the article "Effects" (Sources/FlowKit/FlowKit.docc/Effects.md), pasted as the document writes it, between the
// lines "verbatim" and "end": the switch cases into a reducer, the declarations into its flow.
// Around them is what a TCA user would write around the same fragments: the flow, its State, its
// Event (the document's `Action`) and the other cases. The one sample not here is the SwiftUI
// `body`; `EffectsSampleTests` runs its `await send(.runTasks).finish()` through a FlowStore.

/// ".run for Async Work" and ".send for Synchronous Action Dispatch".
struct RunAndSendFlow: Flow {
    struct State: Equatable {
        var isLoading = false
        var data: String?
        var saved = false
    }

    @CasePathable
    enum Event {
        case loadData
        case didLoadData(Result<String, any Error>)
        case view(View)
        case saveData

        @CasePathable
        enum View {
            case onTapSave
        }
    }

    @Dependency(\.apiClient) var apiClient

    func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        // verbatim: ".run for Async Work"
        case .loadData:
            state.isLoading = true
            return .run { send in
                let data = try await apiClient.fetchData()
                await send(.didLoadData(.success(data)))
            }

        case .didLoadData(.success(let data)):
            state.isLoading = false
            state.data = data
            return .none
        // end
        case .didLoadData(.failure):
            state.isLoading = false
            return .none
        // verbatim: ".send for Synchronous Action Dispatch"
        case .view(.onTapSave):
            return .send(.saveData)
        // end
        case .saveData:
            state.saved = true
            return .none
        }
    }
}

/// "Effect Error Handling": `catch:` that sends, and `catch:` that reports.
struct ErrorHandlingFlow: Flow {
    struct State: Equatable {
        var item: String?
        var failure: String?
        var synced = false
    }

    @CasePathable
    enum Event {
        case loadItem(Int)
        case itemLoaded(String)
        case loadFailed(any Error)
        case syncData
        case syncCompleted
    }

    @Dependency(\.apiClient) var apiClient
    @Dependency(\.syncClient) var syncClient

    func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        // verbatim: "Use the `catch:` parameter for structured error handling"
        case .loadItem(let id):
            return .run { send in
                let item = try await apiClient.fetchItem(id)
                await send(.itemLoaded(item))
            } catch: { error, send in
                await send(.loadFailed(error))
            }
        // end
        case .itemLoaded(let item):
            state.item = item
            return .none
        case .loadFailed(let error):
            state.failure = "\(error)"
            return .none
        // verbatim: "For non-critical errors where you want to log but not surface to user"
        case .syncData:
            return .run { send in
                try await syncClient.sync()
                await send(.syncCompleted)
            } catch: { error, _ in
                reportIssue(error)
            }
        // end
        case .syncCompleted:
            state.synced = true
            return .none
        }
    }
}

/// "Effect Composition": `.concatenate` and `.merge`.
struct CompositionFlow: Flow {
    struct State: Equatable {
        var steps: [String] = []
    }

    @CasePathable
    enum Event: Equatable {
        case onAppear
        case loadData
        case trackAnalytics
        case onSave
        case delegate(Delegate)

        enum Delegate: Equatable {
            case didSave
        }
    }

    @Dependency(\.dismiss) var dismiss

    func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        // verbatim: ".concatenate for Sequential Effects"
        case .onAppear:
            return .concatenate(
                .send(.loadData),
                .send(.trackAnalytics)
            )
        // end
        case .loadData:
            state.steps.append("loadData")
            return .none
        case .trackAnalytics:
            state.steps.append("trackAnalytics")
            return .none
        // verbatim: ".merge for Concurrent Effects"
        case .onSave:
            return .merge(
                .send(.delegate(.didSave)),
                .run { _ in await dismiss() }
            )
        // end
        case .delegate(.didSave):
            state.steps.append("didSave")
            return .none
        }
    }
}

/// "Cancellation": `.cancellable(id:cancelInFlight:)` on a stream, `.cancel(id:)`.
struct StreamingFlow: Flow {
    struct State: Equatable {
        var received: [String] = []
    }

    @CasePathable
    enum Event: Equatable {
        case startStreaming
        case stopStreaming
        case didReceiveData(String)
    }

    @Dependency(\.client) var client

    func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        // verbatim: ".cancellable for Long-Running Effects"
        case .startStreaming:
            return .run { send in
                for try await data in client.stream() {
                    await send(.didReceiveData(data))
                }
            }
            .cancellable(id: "data-stream", cancelInFlight: true)

        case .stopStreaming:
            return .cancel(id: "data-stream")
        // end
        case .didReceiveData(let data):
            state.received.append(data)
            return .none
        }
    }
}

/// "View Lifecycle Effects": `.runTasks` and `.onAppear` of a `@CasePathable` view event.
struct LifecycleFlow: Flow {
    struct State: Equatable {
        var status: String?
        var data: String?
    }

    @CasePathable
    enum Event: Equatable {
        case view(View)
        case statusChanged(String)
        case dataLoaded(String)

        // verbatim: "In Reducer" (the enum)
        @CasePathable
        enum View {
            case runTasks
            case onAppear
        }
        // end
    }

    @Dependency(\.statusClient) var statusClient
    @Dependency(\.loadInitialData) var loadInitialData

    func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        // verbatim: "In Reducer" (the cases)
        case .view(.runTasks):
            return .run { send in
                for await status in statusClient.stream() {
                    await send(.statusChanged(status))
                }
            }
            // No .cancellable() needed - .task handles auto-cancellation

        case .view(.onAppear):
            return .run { send in
                let data = try await loadInitialData()
                await send(.dataLoaded(data))
            }
        // end
        case .statusChanged(let status):
            state.status = status
            return .none
        case .dataLoaded(let data):
            state.data = data
            return .none
        }
    }
}

/// "Basic Timer with Clock Dependency".
struct BasicTimerFlow: Flow {
    struct State: Equatable {
        var isTimerActive = false
        var secondsElapsed = 0
    }

    @CasePathable
    enum Event: Equatable {
        case toggleTimerButtonTapped
        case timerTick
    }

    // verbatim: "Basic Timer with Clock Dependency" (the declarations)
    @Dependency(\.continuousClock) var clock
    private enum CancelID { case timer }
    // end

    func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        // verbatim: "Basic Timer with Clock Dependency" (the cases)
        case .toggleTimerButtonTapped:
            state.isTimerActive.toggle()
            return .run { [isTimerActive = state.isTimerActive] send in
                guard isTimerActive else { return }
                for await _ in self.clock.timer(interval: .seconds(1)) {
                    await send(.timerTick)
                }
            }
            .cancellable(id: CancelID.timer, cancelInFlight: true)

        case .timerTick:
            state.secondsElapsed += 1
            return .none
        // end
        }
    }
}

/// "Animated Timer Updates": outside SwiftUI there is nothing to animate, and the send is a send.
struct AnimatedTimerFlow: Flow {
    struct State: Equatable {
        var isTimerActive = false
        var secondsElapsed = 0
    }

    @CasePathable
    enum Event: Equatable {
        case toggleTimerButtonTapped
        case timerTick
    }

    @Dependency(\.continuousClock) var clock
    private enum CancelID { case timer }

    func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        // verbatim: "Animated Timer Updates"
        case .toggleTimerButtonTapped:
            state.isTimerActive.toggle()
            return .run { [isTimerActive = state.isTimerActive] send in
                guard isTimerActive else { return }
                for await _ in self.clock.timer(interval: .seconds(1)) {
                    await send(.timerTick, animation: .default)
                }
            }
            .cancellable(id: CancelID.timer, cancelInFlight: true)
        // end
        case .timerTick:
            state.secondsElapsed += 1
            return .none
        }
    }
}

/// "Timer with Duration and Completion".
struct CountdownFlow: Flow {
    struct State: Equatable {
        var timeRemaining = 0
        var completed = false
    }

    @CasePathable
    enum Event: Equatable {
        case startCountdown
        case timerTick
        case timerCompleted
    }

    @Dependency(\.continuousClock) var clock
    private enum CancelID { case timer }

    func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        // verbatim: "Timer with Duration and Completion"
        case .startCountdown:
            state.timeRemaining = 60
            return .run { send in
                for await _ in self.clock.timer(interval: .seconds(1)) {
                    await send(.timerTick)
                }
            }
            .cancellable(id: CancelID.timer)

        case .timerTick:
            state.timeRemaining -= 1
            if state.timeRemaining <= 0 {
                return .concatenate(
                    .cancel(id: CancelID.timer),
                    .send(.timerCompleted)
                )
            }
            return .none
        // end
        case .timerCompleted:
            state.completed = true
            return .none
        }
    }
}

/// "Capturing for Async Work": an event carrying `Result<_, any Error>`, received by case path.
struct NumberFactFlow: Flow {
    struct State: Equatable {
        var count = 0
        var isLoading = false
        var fact: String?
    }

    @CasePathable
    enum Event {
        case numberFactButtonTapped
        case numberFactResponse(Result<String, any Error>)
    }

    @Dependency(\.factClient) var factClient

    func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        // verbatim: "Capturing for Async Work"
        case .numberFactButtonTapped:
            state.isLoading = true
            return .run { [count = state.count] send in
                let fact = try await factClient.fetch(count)
                await send(.numberFactResponse(.success(fact)))
            }
        // end
        case .numberFactResponse(.success(let fact)):
            state.isLoading = false
            state.fact = fact
            return .none
        case .numberFactResponse(.failure):
            state.isLoading = false
            return .none
        }
    }
}

/// "Capturing Multiple Values": a debounced search that cancels the one in flight.
struct SearchFlow: Flow {
    struct State: Equatable {
        var searchText = ""
        var filter = "all"
        var sortOrder = "relevance"
        var results: [String] = []
    }

    @CasePathable
    enum Event: Equatable {
        case searchTextChanged(String)
        case searchResults([String])
    }

    enum CancelID { case search }

    @Dependency(\.searchClient) var searchClient

    func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        // verbatim: "Capturing Multiple Values"
        case .searchTextChanged(let text):
            state.searchText = text
            return .run { [text, filter = state.filter, sortOrder = state.sortOrder] send in
                try await Task.sleep(for: .milliseconds(300))
                let results = try await searchClient.search(
                    text: text,
                    filter: filter,
                    sortOrder: sortOrder
                )
                await send(.searchResults(results))
            }
            .cancellable(id: CancelID.search, cancelInFlight: true)
        // end
        case .searchResults(let results):
            state.results = results
            return .none
        }
    }
}

/// "Capturing for Conditionals".
struct OfflineFlow: Flow {
    struct State: Equatable {
        var isOfflineMode = false
        var data: String?
    }

    @CasePathable
    enum Event: Equatable {
        case loadData
        case dataLoaded(String)
    }

    @Dependency(\.apiClient) var apiClient
    @Dependency(\.cacheClient) var cacheClient

    func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        // verbatim: "Capturing for Conditionals"
        case .loadData:
            return .run { [isOfflineMode = state.isOfflineMode] send in
                if isOfflineMode {
                    let data = await cacheClient.loadFromCache()
                    await send(.dataLoaded(data))
                } else {
                    let data = try await apiClient.fetchData()
                    await send(.dataLoaded(data))
                }
            }
        // end
        case .dataLoaded(let data):
            state.data = data
            return .none
        }
    }
}
