import Foundation
@testable import SignupServer
import XCTest

/// The setup page's QR code: a well-formed symbol for the otpauth URI (its size follows its
/// version, its three finder patterns where a reader looks for them), drawn as SVG with a
/// quiet zone and a label. (The browser suite reads the key off the page as a person typing it
/// would.)
final class QRCodeSVGTests: XCTestCase {
    private let uri = "otpauth://totp/Example%20Co:ada?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ&issuer=Example%20Co"
        + "&algorithm=SHA1&digits=6&period=30"

    func testTheSymbolHasItsFinderPatternsAndAVersionsSize() throws {
        let modules = try XCTUnwrap(QRCodeSVG.modules(uri))
        let width = modules.count
        XCTAssertEqual((width - 17) % 4, 0, "a QR symbol is 17 + 4 × version modules wide")
        XCTAssertTrue(modules.allSatisfy { $0.count == width })
        // A finder pattern: a dark 7×7 ring, a light ring inside, a dark 3×3 core.
        func finder(at top: Int, _ left: Int) -> Bool {
            (0..<7).allSatisfy { row in
                (0..<7).allSatisfy { column in
                    let ring = min(row, column, 6 - row, 6 - column)
                    return modules[top + row][left + column] == (ring != 1)
                }
            }
        }
        XCTAssertTrue(finder(at: 0, 0))
        XCTAssertTrue(finder(at: 0, width - 7))
        XCTAssertTrue(finder(at: width - 7, 0))
        XCTAssertFalse(finder(at: width - 7, width - 7), "no finder in the fourth corner")
    }

    func testTheSVGDrawsEveryDarkModuleInsideAQuietZone() throws {
        let modules = try XCTUnwrap(QRCodeSVG.modules(uri))
        let svg = try XCTUnwrap(QRCodeSVG.svg(uri, label: "QR code \"for\" <your app>"))
        let size = modules.count + 8
        XCTAssertTrue(svg.hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(size) \(size)\""), svg)
        XCTAssertTrue(svg.contains("aria-label=\"QR code &quot;for&quot; &lt;your app>\""), "the label escaped")
        // The path's runs cover exactly the dark modules.
        var drawn = Set<[Int]>()
        for run in svg.matches(of: #/M(\d+) (\d+)h(\d+)v1/#) {
            let column = Int(run.1)!, row = Int(run.2)!, length = Int(run.3)!
            for offset in 0..<length { drawn.insert([row - 4, column - 4 + offset]) }
        }
        var dark = Set<[Int]>()
        for (row, line) in modules.enumerated() { for (column, on) in line.enumerated() where on { dark.insert([row, column]) } }
        XCTAssertEqual(drawn, dark)
        XCTAssertTrue(drawn.allSatisfy { $0[0] >= 0 && $0[1] >= 0 }, "nothing in the quiet zone")
    }
}
