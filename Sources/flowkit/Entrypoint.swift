import FlowKitCommands

@main
enum Entrypoint {
    static func main() async {
        await FlowKitCLI.main()
    }
}
