import Dispatch
import Foundation
#if canImport(Combine)
import Combine
#else
import OpenCombineShim
#endif

/// A scheduler that runs work on a `DispatchQueue`, like the queue's own scheduler, but
/// keeps every delayed action on one timer shared by all instances (`DeadlineTimers`).
///
/// Why: `debounce` schedules a timer for every value it receives and cancels the previous
/// one. On a `DispatchQueue` that is a new kernel-backed timer source per keystroke, and
/// with thousands of people typing the timer churn costs more than the rules. Here a
/// keystroke costs one heap insertion under a lock; the shared source is re-armed only when
/// the earliest deadline moves, which a debounce (every deadline later than the last) seldom
/// does.
public struct SharedTimerScheduler: Scheduler, @unchecked Sendable {
    public typealias SchedulerTimeType = DispatchQueue.SchedulerTimeType
    public typealias SchedulerOptions = DispatchQueue.SchedulerOptions

    /// Where every action runs.
    public let queue: DispatchQueue
    /// Held while each action runs, when given. An owner that works on its state from its
    /// callers' threads under this lock (rather than with `queue.sync`, whose generic
    /// overlay costs thousands of instructions a call) stays the only one touching that
    /// state while its scheduled actions run.
    public let lock: NSLock?
    private let timers: DeadlineTimers

    public init(queue: DispatchQueue, lock: NSLock? = nil, timers: DeadlineTimers = .shared) {
        self.queue = queue
        self.lock = lock
        self.timers = timers
    }

    /// `action`, made to run holding `lock` when there is one.
    private func guarded(_ action: @escaping () -> Void) -> () -> Void {
        guard let lock else { return action }
        return { lock.withLock(action) }
    }

    public var now: SchedulerTimeType { queue.now }
    public var minimumTolerance: SchedulerTimeType.Stride { queue.minimumTolerance }

    public func schedule(options: SchedulerOptions?, _ action: @escaping () -> Void) {
        // Combine's actions are not `Sendable`; a scheduler runs them where the caller asked
        // (as `DispatchQueue`'s own scheduler does), which is what keeps them safe.
        nonisolated(unsafe) let action = guarded(action)
        queue.async { action() }
    }

    public func schedule(
        after date: SchedulerTimeType, tolerance: SchedulerTimeType.Stride,
        options: SchedulerOptions?, _ action: @escaping () -> Void
    ) {
        timers.add(at: date.dispatchTime, repeating: nil, on: queue, guarded(action))
    }

    public func schedule(
        after date: SchedulerTimeType, interval: SchedulerTimeType.Stride, tolerance: SchedulerTimeType.Stride,
        options: SchedulerOptions?, _ action: @escaping () -> Void
    ) -> Cancellable {
        // A non-positive interval would fire in a busy loop; one nanosecond is the least.
        let nanoseconds = UInt64(max(1, interval.magnitude))
        return timers.add(at: date.dispatchTime, repeating: nanoseconds, on: queue, guarded(action))
    }
}

/// Pending deadlines of any number of schedulers, in one min-heap served by one Dispatch
/// timer source. Cancelled entries are dropped when they come due, not searched for.
public final class DeadlineTimers: @unchecked Sendable {
    /// The timers every `SharedTimerScheduler` uses unless given others.
    public static let shared = DeadlineTimers()

    /// One pending action; cancelling it releases the action (and what it captured) at once.
    public final class Entry: Cancellable, @unchecked Sendable {
        fileprivate var deadline: UInt64
        fileprivate let order: UInt64
        fileprivate let interval: UInt64?
        fileprivate let queue: DispatchQueue
        // Guarded by the owning `DeadlineTimers`' lock.
        fileprivate var action: (() -> Void)?
        fileprivate weak var owner: DeadlineTimers?

        fileprivate init(deadline: UInt64, order: UInt64, interval: UInt64?, queue: DispatchQueue,
                         action: @escaping () -> Void, owner: DeadlineTimers) {
            self.deadline = deadline
            self.order = order
            self.interval = interval
            self.queue = queue
            self.action = action
            self.owner = owner
        }

        public func cancel() {
            guard let owner else { return }
            owner.lock.withLock { action = nil }
        }

        fileprivate func isEarlier(than other: Entry) -> Bool {
            deadline != other.deadline ? deadline < other.deadline : order < other.order
        }
    }

    fileprivate let lock = NSLock()
    // Guarded by `lock`, which is their exclusivity: no runtime check per access, and the
    // heap's sift loops access it many times (see DEVELOPMENT.md, "exclusivity").
    @exclusivity(unchecked) private var heap: [Entry] = []
    @exclusivity(unchecked) private var nextOrder: UInt64 = 0
    /// The deadline the source is armed for, nil when disarmed.
    private var armedDeadline: UInt64?
    private let source: DispatchSourceTimer

    public init() {
        source = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "deadline-timers"))
        source.setEventHandler { [weak self] in self?.fireDue() }
        source.schedule(deadline: .distantFuture)
        source.activate()
    }

    deinit { source.cancel() }

    /// Pending entries, cancelled ones included until they come due (for tests).
    public var pendingCount: Int { lock.withLock { heap.count } }

    @discardableResult
    fileprivate func add(at deadline: DispatchTime, repeating interval: UInt64?, on queue: DispatchQueue,
                         _ action: @escaping () -> Void) -> Entry {
        lock.withLock {
            let entry = Entry(deadline: deadline.uptimeNanoseconds, order: nextOrder, interval: interval,
                              queue: queue, action: action, owner: self)
            nextOrder += 1
            push(entry)
            armIfEarlier(entry.deadline)
            return entry
        }
    }

    /// How often the source has fired (tests: deadlines in one slot share a wake-up).
    public var wakeUps: Int { lock.withLock { firedCount } }
    // Guarded by `lock`.
    private var firedCount = 0

    /// Runs on the source's queue: hands every due action to its queue, in deadline order.
    private func fireDue() {
        let due: [(DispatchQueue, () -> Void)] = lock.withLock {
            armedDeadline = nil
            firedCount += 1
            let now = DispatchTime.now().uptimeNanoseconds
            var due: [(DispatchQueue, () -> Void)] = []
            while let first = heap.first, first.deadline <= now {
                popFirst()
                guard let action = first.action else { continue }
                due.append((first.queue, action))
                if let interval = first.interval {
                    first.deadline = max(first.deadline &+ interval, now)
                    push(first)
                } else {
                    first.action = nil
                }
            }
            if let first = heap.first { armIfEarlier(first.deadline) }
            return due
        }
        for (queue, action) in due {
            nonisolated(unsafe) let action = action
            queue.async { action() }
        }
    }

    // MARK: Heap (call with `lock` held)

    /// The source wakes at the end of the slot a deadline falls in, never before the
    /// deadline. Why: every username keystroke arms a debounce, each a few milliseconds
    /// after the last person's, and a wake-up each (the manager thread, then a worker for
    /// `fireDue`) cost a third of a context switch and about 6 µs of CPU per edit at 1,000
    /// edits a second. In slots, everything due within one wakes together; a debounce of
    /// 300 ms becomes at most 310.
    static let slotNanoseconds: UInt64 = 10_000_000

    private func armIfEarlier(_ deadline: UInt64) {
        let slotEnd = deadline.roundedUp(toMultipleOf: Self.slotNanoseconds)
        if let armed = armedDeadline, armed <= slotEnd { return }
        armedDeadline = slotEnd
        source.schedule(deadline: DispatchTime(uptimeNanoseconds: slotEnd), leeway: .milliseconds(1))
    }

    private func push(_ entry: Entry) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].isEarlier(than: heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private func popFirst() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var first = parent
            if left < heap.count, heap[left].isEarlier(than: heap[first]) { first = left }
            if right < heap.count, heap[right].isEarlier(than: heap[first]) { first = right }
            if first == parent { return }
            heap.swapAt(parent, first)
            parent = first
        }
    }
}

private extension UInt64 {
    /// The least multiple of `step` at or after `self` (`self` itself when it is one).
    func roundedUp(toMultipleOf step: UInt64) -> UInt64 {
        let remainder = self % step
        return remainder == 0 ? self : self &+ (step - remainder)
    }
}
