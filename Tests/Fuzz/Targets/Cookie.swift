import MicroHTTPD

extension FuzzTarget {
    /// The Cookie header, read for the sign-in session and the form's own cookies.
    static let cookie = FuzzTarget(
        name: "cookie",
        summary: "Cookie headers (MicroHTTPD HTTPRequest.cookieValues)"
    ) { input in
        let parts = input.texts(2)
        let name = parts[0], header = parts[1]
        let values = HTTPRequest.cookieValues(named: name, in: header)
        // A value is always a piece of the header between separators: never a ';' in it, and
        // never more values than pairs.
        for value in values {
            fuzzCheck(!value.contains(";"), "a cookie value holds a ';': \(value)")
            fuzzCheck(header.contains(value), "a cookie value not in the header")
        }
        fuzzCheck(values.count <= header.split(separator: ";").count, "more values than pairs")
    }
}
