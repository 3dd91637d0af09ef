// Flows declare dependencies the way TCA writes them, `@Dependency(\.continuousClock) var clock`,
// tests swap in a `TestClock`, and events are `@CasePathable` for `store.receive(\.case.path)`:
// importing FlowKit brings these libraries, as importing TCA does.
@_exported import CasePaths
@_exported import Clocks
@_exported import Dependencies
