import WebKernel
/// A browser as its owner recognises it in a list of devices ("Firefox · Linux"), from its
/// `User-Agent`: the browser's family and the system's, nothing finer (no versions, no
/// models), so the label helps a person tell their devices apart and tracks nobody.
package enum DeviceLabel {
    /// Families in the order they must be tried: Edge, Opera and Samsung's browser say
    /// "Chrome" too, and every Chrome says "Safari".
    private static let browsers: [(marker: String, name: String)] = [
        ("Edg/", "Edge"), ("EdgiOS", "Edge"), ("OPR/", "Opera"), ("SamsungBrowser", "Samsung Internet"),
        ("Firefox/", "Firefox"), ("FxiOS", "Firefox"), ("CriOS", "Chrome"), ("Chromium/", "Chromium"),
        ("Chrome/", "Chrome"), ("Safari/", "Safari"), ("curl/", "curl"),
    ]
    /// iOS browsers say "like Mac OS X", Android ones "Linux": tried first.
    private static let systems: [(marker: String, name: String)] = [
        ("iPhone", "iOS"), ("iPad", "iPadOS"), ("Android", "Android"), ("CrOS", "ChromeOS"), ("Windows", "Windows"),
        ("Macintosh", "macOS"), ("Mac OS X", "macOS"), ("Linux", "Linux"),
    ]
    /// Longer headers are read only this far: the families are named near the start.
    package static let readBytes = 512

    package static func of(userAgent: String?) -> String {
        guard let userAgent, !userAgent.isEmpty else { return "" }
        let head = String(decoding: userAgent.utf8.prefix(readBytes), as: UTF8.self)
        let browser = browsers.first { head.contains($0.marker) }?.name
        let system = systems.first { head.contains($0.marker) }?.name
        return [browser, system].compactMap { $0 }.joined(separator: " · ")
    }
}
