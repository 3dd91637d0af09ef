/// libFuzzer's driver, for the fuzz targets' entry points.
///
/// Only the coverage instrumentation, not libFuzzer's own `main`, is linked into every module (a
/// `main` of libFuzzer's would clash with SwiftPM's executables and plugins), so each target's
/// entry point hands its command line to the driver here.
public enum LibFuzzer {
    public static func run(
        _ argc: CInt,
        _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>,
        _ testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
    ) -> CInt {
        var argc = argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = argv
        return runFuzzerDriver(&argc, &argv, testOneInput)
    }
}

@_silgen_name("LLVMFuzzerRunDriver")
private func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt
