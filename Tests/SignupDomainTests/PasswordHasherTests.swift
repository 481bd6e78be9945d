import Dispatch
import HTTPTestSupport
import Foundation
import SignupDomain
import XCTest
import Locking

/// `Argon2idPasswordHasher` against real libsodium, and `PasswordHashingQueue`'s bound on
/// concurrent jobs with a scripted hasher.
final class PasswordHasherTests: XCTestCase {
    /// libsodium's argon2id floor is t=1, m=8 KiB; t=1, m=8 MiB keeps each hash a few ms.
    private let fast = Argon2idPasswordHasher(opsLimit: 1, memLimitBytes: 8 * 1024 * 1024)

    /// `$argon2id$v=19$m=<KiB>,t=<passes>,p=1$<salt>$<hash>`, salt and hash in unpadded base64.
    private func assertArgon2idHash(_ hash: String, kib: Int, passes: Int,
                                    file: StaticString = #filePath, line: UInt = #line) throws {
        let pattern = #"^\$argon2id\$v=19\$m=\#(kib),t=\#(passes),p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$"#
        let regex = try Regex(pattern)
        XCTAssertNotNil(hash.wholeMatch(of: regex), "unexpected hash format: \(hash)", file: file, line: line)
    }

    // MARK: Argon2idPasswordHasher

    func testDefaultsAreLibsodiumInteractiveAndPresetIsOWASPMinimum() {
        let standard = Argon2idPasswordHasher()
        XCTAssertEqual(standard.opsLimit, 2)
        XCTAssertEqual(standard.memLimitBytes, 64 * 1024 * 1024)
        XCTAssertEqual(Argon2idPasswordHasher.owaspMinimum.opsLimit, 2)
        XCTAssertEqual(Argon2idPasswordHasher.owaspMinimum.memLimitBytes, 19 * 1024 * 1024)
    }

    func testHashIsAnArgon2idStringCarryingTheConfiguredParameters() throws {
        try assertArgon2idHash(try fast.hash("correct horse battery staple"), kib: 8192, passes: 1)
        try assertArgon2idHash(try Argon2idPasswordHasher.owaspMinimum.hash("correct horse battery staple"),
                               kib: 19456, passes: 2)
        let custom = Argon2idPasswordHasher(opsLimit: 3, memLimitBytes: 8 * 1024)
        try assertArgon2idHash(try custom.hash("pw"), kib: 8, passes: 3)
    }

    func testVerifyAcceptsOnlyTheExactPassword() throws {
        let password = "correct horse battery staple"
        let hash = try fast.hash(password)
        XCTAssertTrue(fast.verify(password, against: hash))
        XCTAssertFalse(fast.verify("Tr0ub4dor&3", against: hash))
        XCTAssertFalse(fast.verify("correct horse battery stapla", against: hash), "one character changed")
        XCTAssertFalse(fast.verify("correct horse battery staple ", against: hash), "trailing space")
        XCTAssertFalse(fast.verify("Correct horse battery staple", against: hash), "case changed")
        XCTAssertFalse(fast.verify("", against: hash))
    }

    func testVerifyIsFalseForMalformedAndUnknownHashes() throws {
        let valid = try fast.hash("secret")
        let garbage = [
            "!",  // the marker for accounts that cannot sign in
            "",
            "garbage",
            "$argon2id$",
            "$argon2id$v=19$m=8192,t=1,p=1$",
            String(valid.dropLast(5)),  // truncated
            valid.replacingOccurrences(of: "$argon2id$", with: "$argon2i$"),
            valid.replacingOccurrences(of: "$argon2id$", with: "$2b$"),
            valid + "$extra",
            "$argon2id$v=19$m=8192,t=1,p=1$\u{0}$\u{0}",
            String(repeating: "$argon2id$", count: 100),
        ]
        for hash in garbage {
            XCTAssertFalse(fast.verify("secret", against: hash), "accepted \(hash.debugDescription)")
            XCTAssertFalse(fast.verify("", against: hash), "accepted \(hash.debugDescription) for an empty password")
            XCTAssertFalse(fast.verify("!", against: hash), "accepted \(hash.debugDescription) for \"!\"")
        }
    }

    func testSamePasswordHashesDifferentlyButBothVerify() throws {
        let first = try fast.hash("same password")
        let second = try fast.hash("same password")
        XCTAssertNotEqual(first, second, "the salt must be random")
        XCTAssertTrue(fast.verify("same password", against: first))
        XCTAssertTrue(fast.verify("same password", against: second))
    }

    func testEmptyPasswordCanBeHashedAndVerified() throws {
        let hash = try fast.hash("")
        XCTAssertTrue(fast.verify("", against: hash))
        XCTAssertFalse(fast.verify(" ", against: hash))
    }

    func testUnicodePasswordsRoundTripByExactUTF8Bytes() throws {
        for password in ["pässwörd", "密码安全很重要", "🔐🐧 emoji 👩‍👩‍👧", "Ωμέγα", "\u{0}nul inside"] {
            let hash = try fast.hash(password)
            XCTAssertTrue(fast.verify(password, against: hash), "round trip of \(password.debugDescription)")
        }

        // Swift's String == treats these as equal; the hasher sees different bytes. Callers normalise.
        let nfc = "caf\u{E9}"
        let nfd = "cafe\u{301}"
        XCTAssertEqual(nfc, nfd)
        XCTAssertNotEqual(Array(nfc.utf8), Array(nfd.utf8))
        let nfcHash = try fast.hash(nfc)
        XCTAssertTrue(fast.verify(nfc, against: nfcHash))
        XCTAssertFalse(fast.verify(nfd, against: nfcHash))
        let nfdHash = try fast.hash(nfd)
        XCTAssertTrue(fast.verify(nfd, against: nfdHash))
        XCTAssertFalse(fast.verify(nfc, against: nfdHash))
    }

    func testVerifyUsesTheParametersStoredInTheHash() throws {
        // A hash made with other parameters still verifies: the string carries its own.
        let old = try Argon2idPasswordHasher(opsLimit: 2, memLimitBytes: 16 * 1024).hash("pw")
        XCTAssertTrue(fast.verify("pw", against: old))
    }

    func testNeedsRehashWhenParametersChange() throws {
        let hash = try fast.hash("pw")
        XCTAssertFalse(fast.needsRehash(hash))
        XCTAssertFalse(Argon2idPasswordHasher(opsLimit: 1, memLimitBytes: 8 * 1024 * 1024).needsRehash(hash))
        XCTAssertTrue(Argon2idPasswordHasher(opsLimit: 2, memLimitBytes: 8 * 1024 * 1024).needsRehash(hash))
        XCTAssertTrue(Argon2idPasswordHasher(opsLimit: 1, memLimitBytes: 16 * 1024 * 1024).needsRehash(hash))
        XCTAssertTrue(Argon2idPasswordHasher.owaspMinimum.needsRehash(hash))
        XCTAssertTrue(fast.needsRehash("!"))
        XCTAssertTrue(fast.needsRehash("garbage"))
        XCTAssertTrue(fast.needsRehash(hash.replacingOccurrences(of: "$argon2id$", with: "$argon2i$")))
    }

    func testParametersBelowLibsodiumsMinimumThrowFailed() {
        let tooLittleMemory = Argon2idPasswordHasher(opsLimit: 1, memLimitBytes: 1024)
        XCTAssertThrowsError(try tooLittleMemory.hash("pw")) { error in
            XCTAssertEqual(error as? PasswordHashingError, .failed)
        }
        let noPasses = Argon2idPasswordHasher(opsLimit: 0, memLimitBytes: 8 * 1024 * 1024)
        XCTAssertThrowsError(try noPasses.hash("pw")) { error in
            XCTAssertEqual(error as? PasswordHashingError, .failed)
        }
    }

    func testErrorsHaveReadableDescriptions() {
        XCTAssertTrue(PasswordHashingError.outOfMemory.description.contains("memory"))
        XCTAssertTrue(PasswordHashingError.failed.description.contains("failed"))
        XCTAssertNotEqual(PasswordHashingError.outOfMemory.description, PasswordHashingError.failed.description)
    }

    // MARK: PasswordHashingQueue

    func testQueueHashesAndVerifiesWithTheRealHasher() async throws {
        let queue = PasswordHashingQueue(hasher: fast, maximumConcurrentJobs: 2)
        let hashed = Occurrences()
        let result = Locked<Result<String, Error>?>(nil)
        try queue.hash("queued password") { outcome in
            result.withLock { $0 = outcome }
            hashed.record()
        }
        let hashedInTime = await hashed.wait(timeout: 10)
        XCTAssertTrue(hashedInTime)
        let hash = try XCTUnwrap(result.withLock { $0 }).get()
        XCTAssertTrue(fast.verify("queued password", against: hash))

        let verified = Occurrences()
        let answers = Locked<[String: Bool]>([:])
        for candidate in ["queued password", "queued passwore", "", "!"] {
            try queue.verify(candidate, against: hash) { outcome in
                answers.withLock { $0[candidate] = (try? outcome.get()) ?? false }
                verified.record()
            }
        }
        let verifiedInTime = await verified.wait(for: 4, timeout: 10)
        XCTAssertTrue(verifiedInTime)
        XCTAssertEqual(answers.withLock { $0 },
                       ["queued password": true, "queued passwore": false, "": false, "!": false])
    }

    func testQueueReportsHashingErrors() async throws {
        let queue = PasswordHashingQueue(hasher: Argon2idPasswordHasher(opsLimit: 1, memLimitBytes: 1024))
        let done = Occurrences()
        let error = Locked<Error?>(nil)
        try queue.hash("pw") { outcome in
            if case .failure(let failure) = outcome { error.withLock { $0 = failure } }
            done.record()
        }
        let doneInTime = await done.wait(timeout: 10)
        XCTAssertTrue(doneInTime)
        XCTAssertEqual(error.withLock { $0 } as? PasswordHashingError, .failed)
    }

    func testQueueNeverRunsMoreThanTwoJobsAtOnceWithABoundOfTwo() async {
        await assertQueueRunsAtMost(2, of: 8)
    }

    /// Dispatch's thread pool on Linux starts about as wide as the core count and widens only
    /// slowly, so on a small machine a broken bound shows quickly only when it is below that.
    func testQueueRunsJobsOneAtATimeWithABoundOfOne() async {
        await assertQueueRunsAtMost(1, of: 4)
    }

    /// Submits `jobs` hash and verify jobs that all block, checks exactly `bound` start and no
    /// more within a short window, then releases them and checks all complete.
    private func assertQueueRunsAtMost(_ bound: Int, of jobs: Int,
                                       file: StaticString = #filePath, line: UInt = #line) async {
        let hasher = BlockingPasswordHasher()
        let queue = PasswordHashingQueue(hasher: hasher, maximumConcurrentJobs: bound)

        let boundRunning = Occurrences()
        let oneMoreRunning = Occurrences()
        for entry in 1...bound { hasher.onEntry(entry) { boundRunning.record() } }
        hasher.onEntry(bound + 1) { oneMoreRunning.record() }

        let completed = Occurrences()
        let results = Locked<[String]>([])
        for index in 0..<jobs {
            if index.isMultiple(of: 2) {
                try? queue.hash("job \(index)") { result in
                    results.withLock { $0.append((try? result.get()) ?? "error") }
                    completed.record()
                }
            } else {
                try? queue.verify("job \(index)", against: "whatever") { outcome in
                    results.withLock { $0.append((try? outcome.get()) == true ? "verified" : "rejected") }
                    completed.record()
                }
            }
        }

        // Every slot fills while every job blocks; one more must not start within the window.
        let boundStarted = await boundRunning.wait(for: bound, timeout: 10)
        XCTAssertTrue(boundStarted, "\(bound) jobs running", file: file, line: line)
        let oneMoreStarted = await oneMoreRunning.wait(timeout: 0.5)
        XCTAssertFalse(oneMoreStarted, "job \(bound + 1) running while \(bound) block", file: file, line: line)
        XCTAssertEqual(hasher.running, bound, "running while blocked", file: file, line: line)
        hasher.onEntry(bound + 1, nil)  // from now on that entry is expected

        hasher.release(jobs)
        let allCompleted = await completed.wait(for: jobs, timeout: 10)
        XCTAssertTrue(allCompleted, "all jobs completed", file: file, line: line)
        XCTAssertEqual(hasher.maxRunning, bound, "most jobs at once", file: file, line: line)
        XCTAssertEqual(hasher.entries, jobs, file: file, line: line)
        XCTAssertEqual(hasher.running, 0, file: file, line: line)
        let outcomes = results.withLock { $0 }
        XCTAssertEqual(outcomes.count, jobs, file: file, line: line)
        XCTAssertEqual(outcomes.filter { $0 == "verified" }.count, jobs / 2, file: file, line: line)
        XCTAssertEqual(Set(outcomes.filter { $0.hasPrefix("hashed:") }),
                       Set(stride(from: 0, to: jobs, by: 2).map { "hashed:job \($0)" }), file: file, line: line)
    }

    func testDefaultBoundIsTheProcessorCount() {
        let queue = PasswordHashingQueue(hasher: fast)
        XCTAssertEqual(queue.maximumConcurrentJobs, ProcessInfo.processInfo.activeProcessorCount)
    }
}

/// A `PasswordHashing` that records how many calls are inside it at once and blocks each call
/// until the test releases it.
private final class BlockingPasswordHasher: PasswordHashing, @unchecked Sendable {
    private let lock = NSLock()
    private let gate = DispatchSemaphore(value: 0)
    private var _running = 0
    private var _maxRunning = 0
    private var _entries = 0
    private var hooks: [Int: @Sendable () -> Void] = [:]

    var running: Int { lock.withLock { _running } }
    var maxRunning: Int { lock.withLock { _maxRunning } }
    var entries: Int { lock.withLock { _entries } }

    /// Runs `hook` when the `number`th call enters (1-based); nil removes the hook.
    func onEntry(_ number: Int, _ hook: (@Sendable () -> Void)?) {
        lock.withLock { hooks[number] = hook }
    }

    /// Lets `count` blocked (or future) calls return.
    func release(_ count: Int) {
        for _ in 0..<count { gate.signal() }
    }

    private func enterAndBlock() {
        let hook: (@Sendable () -> Void)? = lock.withLock {
            _entries += 1
            _running += 1
            _maxRunning = max(_maxRunning, _running)
            return hooks.removeValue(forKey: _entries)
        }
        hook?()
        gate.wait()
        lock.withLock { _running -= 1 }
    }

    func hash(_ password: String) throws -> String {
        enterAndBlock()
        return "hashed:" + password
    }

    func verify(_ password: String, against hash: String) -> Bool {
        enterAndBlock()
        return true
    }
}
