import FlowKitTools

@main
enum Entrypoint {
    static func main() async {
        await FlowKitTools.main()
    }
}
