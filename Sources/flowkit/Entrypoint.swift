import ArgumentParser
import FlowKitCommands

@main
enum Entrypoint {
    static func main() async {
        await FlowKitCommand.main()
    }
}
