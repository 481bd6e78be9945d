#if canImport(Combine)
import Combine
#else
import OpenCombineShim
#endif

extension Publishers {
    /// The latest value of every publisher in `publishers`, in their order, once each has
    /// produced one. Built from pairwise `combineLatest`; an empty list emits `[]` once.
    public static func combineLatestMany<Output, Failure: Error>(
        _ publishers: [AnyPublisher<Output, Failure>]
    ) -> AnyPublisher<[Output], Failure> {
        guard let first = publishers.first else {
            return Just([]).setFailureType(to: Failure.self).eraseToAnyPublisher()
        }
        return publishers.dropFirst().reduce(first.map { [$0] }.eraseToAnyPublisher()) { combined, next in
            combined.combineLatest(next) { $0 + [$1] }.eraseToAnyPublisher()
        }
    }
}
