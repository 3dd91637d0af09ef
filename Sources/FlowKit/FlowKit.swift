// The module users import: the whole flow library (FlowKitCore) and CasePaths with its
// `@CasePathable` macro, so events can be received by case key path as in TCA.
//
// The macro is the only part of FlowKit that needs swift-syntax, whose release build takes longer
// than all the rest of the `flowkit` command. The cluster, the commands and the `flowkit` binary
// build on FlowKitCore and never compile it; a package that imports FlowKit compiles it once.
@_exported import CasePaths
@_exported import FlowKitCore
