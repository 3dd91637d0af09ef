// Flows declare dependencies the way the seed writes them, `@Dependency(\.continuousClock) var clock`,
// and tests swap in a `TestClock`: importing FlowKit brings both libraries, as importing TCA does.
@_exported import Clocks
@_exported import Dependencies
