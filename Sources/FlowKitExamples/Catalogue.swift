

/// The built-in data the example clients serve, so the examples run without a network.
enum Catalogue {
    static let titles = [
        "Alien", "Amélie", "Arrival", "Blade Runner", "Casablanca", "Chinatown", "Dune",
        "Everything Everywhere All at Once", "Fargo", "Gattaca", "Heat", "Her", "Inception",
        "Jaws", "Memento", "Metropolis", "Moon", "Parasite", "Psycho", "Rashomon", "Rear Window",
        "Seven Samurai", "Solaris", "Spirited Away", "Stalker", "The Matrix", "The Third Man",
        "Vertigo", "Whiplash", "Zodiac",
    ]
}

/// Thrown by a dependency's test value that a test did not override.
public struct UnimplementedDependency: Error, CustomStringConvertible {
    public var name: String

    public var description: String {
        "\(name) is not implemented in tests: override it with withDependencies { … }"
    }
}
