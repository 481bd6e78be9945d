import LiveSignupClient
import MicroHTTPD

extension FuzzTarget {
    /// Every POST body the server reads is decoded here first (every field edit among them).
    static let formBody = FuzzTarget(
        name: "form-body",
        summary: "application/x-www-form-urlencoded bodies (MicroHTTPD URLEncodedForm)"
    ) { input in
        guard let form = try? URLEncodedForm(decoding: input.bytes) else { return }
        // What was decoded says the same when encoded again (as a program's client encodes it)
        // and read back: nothing lost, nothing added, the order kept.
        let again = try? URLEncodedForm(decoding: Array(FormURLEncoder.encode(form.fields).utf8))
        fuzzCheck(again != nil, "a re-encoded form did not decode")
        fuzzCheck(again!.fields.map(\.name) == form.fields.map(\.name)
                  && again!.fields.map(\.value) == form.fields.map(\.value),
                  "a form changed on a round trip: \(form.fields) became \(again!.fields)")
        // Never more fields than '&'-separated pieces: a body cannot make the decoder grow
        // more than the body itself.
        fuzzCheck(form.fields.count <= input.bytes.count(where: { $0 == UInt8(ascii: "&") }) + 1,
                  "more fields than pieces")
    }
}
