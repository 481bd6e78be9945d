// The typing path of the domain, with no server around it: people type the sign-up form key by
// key (the load generator's script) into one SignupViewModel each, and every settled form is
// turned into its snapshot and change events as a form session does. Deterministic, so
// `valgrind --tool=callgrind` gives the same instruction count for the same build each time:
// run it with two numbers of people and divide the difference by the difference in edits.
//
//   swift build -c release --scratch-path .build-bench --product edit-path
//   valgrind --tool=callgrind .build-bench/release/edit-path 20
import CombineSchedulers
import Foundation
import ReactiveValidation
import SignupDomain
import SignupWire
#if canImport(Combine)
import Combine
#else
import OpenCombineShim
#endif

/// Every name is free, answered at once.
struct FreeNames: UsernameAvailabilityChecking {
    func availability(of username: String) -> AnyPublisher<RequirementState, Never> {
        Just(.met).eraseToAnyPublisher()
    }
}

let people = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 20 : 20
let policy = FormPolicy(.classic)
let requirementOrder = policy.allRequirements.map(\.id)
let fieldOrder = ["username", "email", "password", "confirm"]
let scheduler = DispatchQueue.test
var edits = 0
var events = 0
for person in 0..<people {
    let model = SignupViewModel(policy: policy, availabilityChecker: FreeNames(),
                                scheduler: scheduler.eraseToAnyScheduler())
    var published = policy.initialEvaluation.snapshot(rev: 0)
    var rev = 0
    let subscription = model.$form.sink { form in
        let snapshot = form.snapshot(rev: rev)
        events += snapshot.changes(since: published, requirementOrder: requirementOrder, fieldOrder: fieldOrder).count
        published = snapshot
    }
    let password = "Lantern-Orbit-\(person)"
    let script: [(SignupField, String)] = [
        (.username, "person\(person)"), (.email, "person\(person)@example.com"),
        (.password, password), (.confirm, password),
    ]
    for (field, text) in script {
        var typed = ""
        for character in text {
            typed.append(character)
            rev += 1
            model.setValue(typed, for: field)
            edits += 1
        }
        rev += 1
        model.touchedFields.insert(field)
        edits += 1
        scheduler.advance(by: .milliseconds(300))
    }
    subscription.cancel()
}
print("people \(people) edits \(edits) events \(events)")
