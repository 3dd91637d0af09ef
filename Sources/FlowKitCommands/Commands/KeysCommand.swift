import ArgumentParser
import FlowKitCluster
import ZeroMQ

/// `flowkit keys`: CURVE key pairs for a cluster.
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Generate a CURVE key pair, or show the public key of a secret key file.",
        discussion: """
            Writes <name>.key (the secret key, mode 600) and <name>.pub (the public key) in --dir:
              flowkit keys --name coordinator --dir /etc/flowkit/keys
              flowkit keys --show /etc/flowkit/keys/node-1.key
            Servers admit the public keys listed in their --curve-allow file, one per line; a coordinator's \
            submit socket admits only the node keys of its --curve-allow-nodes file. To roll \
            a key: generate the new pair, add its .pub to every allow-list, restart the process with \
            the new secret, then remove the old public key from the allow-lists (docs/SECURITY.md).
            """
    )

    @Option(help: "The key pair's name: the files are <name>.key and <name>.pub.")
    var name: String?

    @Option(help: "Where to write the files.")
    var dir = "."

    @Option(help: "Print the public key of this secret key file instead.")
    var show: String?

    func run() async throws {
        do {
            if let show {
                let security = try CurveSecurity.load(secretKeyFile: show, allowListFile: nil)
                printFlushed(security.keyPair.publicKey.z85)
                return
            }
            guard let name else { throw ValidationError("give --name for a new key pair, or --show <secret key file>") }
            let pair = try CurveSecurity.generate(name: name, directory: dir)
            printFlushed("wrote \(dir)/\(name).key (secret, mode 600) and \(dir)/\(name).pub")
            printFlushed(pair.publicKey.z85)
        } catch let error as ValidationError {
            throw error
        } catch {
            throw fail(error)
        }
    }
}
