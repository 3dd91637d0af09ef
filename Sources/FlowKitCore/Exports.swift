// Flows declare dependencies the way TCA writes them, `@Dependency(\.continuousClock) var clock`,
// and tests swap in a `TestClock`: importing FlowKitCore (and FlowKit) brings these libraries, as
// importing TCA does. CasePathsCore is CasePaths without its macro: `CasePathable`, `CaseKeyPath`.
@_exported import CasePathsCore
@_exported import Clocks
@_exported import Dependencies
