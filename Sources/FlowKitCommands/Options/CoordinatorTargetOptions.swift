import ArgumentParser
import Foundation
import FlowKitCluster

/// Where the coordinator is, for processes that connect to it.
///
/// `--coordinator tcp://host:7400` names the submit endpoint; publish and sync default to the next
/// two ports. Each can also be given on its own. Without any, the local cluster's coordinator.
package struct CoordinatorTargetOptions: ParsableArguments {
    package init() {}

    @Option(help: "The coordinator's submit endpoint; publish and sync are the next two ports unless given.")
    package var coordinator: String?

    @Option(help: "The coordinator's publish endpoint.")
    package var coordinatorPublish: String?

    @Option(help: "The coordinator's sync endpoint.")
    package var coordinatorSync: String?

    @Option(help: "With replicated coordinators: the others' submit endpoints, comma-separated (publish and sync on the next two ports of each). The node submits to whichever leads.")
    package var otherCoordinators: String?

    /// The other replicated coordinators, from flags, then `section` of the settings.
    package func others(settings: Settings, section: String) throws -> [CoordinatorEndpoints] {
        guard let list = settings.string(section, "other-coordinators", flag: otherCoordinators) else { return [] }
        return try list.split(separator: ",").map { submit in
            let submit = String(submit).trimmingCharacters(in: .whitespaces)
            let (publish, sync) = try Self.neighbours(of: submit)
            return CoordinatorEndpoints(submit: submit, publish: publish, sync: sync)
        }
    }

    /// Resolves the endpoints from flags, then `section` of the settings, then the local cluster.
    package func endpoints(settings: Settings, section: String, clusterDir: String = LocalClusterFile.defaultDirectory) throws -> CoordinatorEndpoints {
        if let submit = settings.string(section, "coordinator", flag: coordinator) {
            let publish = settings.string(section, "coordinator-publish", flag: coordinatorPublish)
            let sync = settings.string(section, "coordinator-sync", flag: coordinatorSync)
            // The next two ports are a convention, needed only for what is not given (an ipc://
            // submit endpoint has no port, and needs both).
            if let publish, let sync { return CoordinatorEndpoints(submit: submit, publish: publish, sync: sync) }
            let neighbours = try Self.neighbours(of: submit)
            return CoordinatorEndpoints(submit: submit, publish: publish ?? neighbours.publish, sync: sync ?? neighbours.sync)
        }
        let file = try LocalClusterFile.read(directory: clusterDir)
        return CoordinatorEndpoints(submit: file.coordinator.submit, publish: file.coordinator.publish, sync: file.coordinator.sync)
    }

    /// Every coordinator's publish endpoint, for subscribers: the one ``endpoints(settings:section:clusterDir:)``
    /// resolves and the others (`--other-coordinators`), or every coordinator of the local cluster.
    /// Among replicated coordinators only the leader publishes, whichever it is.
    package func publishEndpoints(settings: Settings, section: String, clusterDir: String = LocalClusterFile.defaultDirectory) throws -> [String] {
        if settings.string(section, "coordinator", flag: coordinator) != nil {
            let first = try endpoints(settings: settings, section: section, clusterDir: clusterDir)
            return [first.publish] + (try others(settings: settings, section: section)).map(\.publish)
        }
        return try LocalClusterFile.read(directory: clusterDir).allCoordinators.map(\.publish)
    }

    /// The publish and sync endpoints by convention: the two ports after `submit`'s.
    package static func neighbours(of submit: String) throws -> (publish: String, sync: String) {
        guard let colon = submit.lastIndex(of: ":"), let port = Int(submit[submit.index(after: colon)...]) else {
            throw ValidationError("--coordinator must be tcp://host:port unless --coordinator-publish and --coordinator-sync are both given; got \(submit)")
        }
        let base = submit[..<colon]
        return ("\(base):\(port + 1)", "\(base):\(port + 2)")
    }
}
