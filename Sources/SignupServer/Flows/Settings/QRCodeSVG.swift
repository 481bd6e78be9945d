import CQRencode
import Foundation
import Identity
import WebKernel

/// A QR code drawn as inline SVG (libqrencode makes the symbol; this only draws its modules),
/// so the second factor's setup page shows it without JavaScript or an image route. The text
/// is the server's own (an `otpauth://` URI), never a visitor's.
enum QRCodeSVG {
    /// The modules of `text`'s symbol at error correction level M (15 %), row by row, true
    /// for dark; nil when libqrencode cannot encode it (too long).
    static func modules(_ text: String) -> [[Bool]]? {
        guard let code = QRcode_encodeString(text, 0, QR_ECLEVEL_M, QR_MODE_8, 1) else { return nil }
        defer { QRcode_free(code) }
        let width = Int(code.pointee.width)
        let data = code.pointee.data!
        // libqrencode: one byte per module, its lowest bit set for a dark one.
        return (0..<width).map { row in (0..<width).map { column in data[row * width + column] & 1 == 1 } }
    }

    /// An `<svg>` of `text`'s QR code with its four-module quiet zone, labelled for screen
    /// readers with `label`; nil when it cannot be encoded.
    static func svg(_ text: String, label: String) -> String? {
        guard let modules = modules(text) else { return nil }
        let quiet = 4, size = modules.count + 2 * quiet
        var path = ""
        for (row, line) in modules.enumerated() {
            var column = 0
            // One rectangle per run of dark modules in a row: a third of the bytes of one a module.
            while column < line.count {
                guard line[column] else { column += 1; continue }
                let start = column
                while column < line.count, line[column] { column += 1 }
                path += "M\(start + quiet) \(row + quiet)h\(column - start)v1h-\(column - start)z"
            }
        }
        let escaped = label.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;")
            .replacingOccurrences(of: "<", with: "&lt;")
        return "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(size) \(size)\" width=\"\(size * 5)\" "
            + "height=\"\(size * 5)\" role=\"img\" aria-label=\"\(escaped)\" shape-rendering=\"crispEdges\">"
            + "<rect width=\"\(size)\" height=\"\(size)\" fill=\"#fff\"/><path fill=\"#000\" d=\"\(path)\"/></svg>"
    }
}
