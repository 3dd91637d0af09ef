/// The dashboard's page, script and style: files of their own in `Page/` (HTML, CSS and
/// JavaScript, edited as such), embedded in the binary when it is built, so nothing is fetched
/// from anywhere else: the page works offline, behind any firewall, and wherever the binary alone
/// was copied.
enum DashboardPage {
    static let html = text(PackageResources.dashboard_html)

    /// One script, in three parts: the model built from the monitor's lines, the views, the
    /// controls. Served as `/dashboard.js`.
    static let script = [PackageResources.model_js, PackageResources.views_js, PackageResources.controls_js].map(text).joined(separator: "\n")

    static let style = text(PackageResources.dashboard_css)

    private static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }
}
