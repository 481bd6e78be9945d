// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "LiveSignup",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "signup-server", targets: ["signup-server"]),
        .library(name: "LiveSignupClient", targets: ["LiveSignupClient"]),
        .library(name: "MicroHTTPD", targets: ["MicroHTTPD"]),
        .library(name: "ReactiveValidation", targets: ["ReactiveValidation"]),
    ],
    dependencies: [
        .package(url: "https://github.com/OpenCombine/OpenCombine", from: "0.14.0"),
        .package(url: "https://github.com/pointfreeco/combine-schedulers", from: "1.2.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.1"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
    ],
    targets: [
        // Layer 0: libmicrohttpd as a C module, plus non-variadic wrappers Swift can call.
        .systemLibrary(
            name: "CMicroHTTPD",
            pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]
        ),
        .target(name: "MicroHTTPDShims", dependencies: ["CMicroHTTPD"]),
        // libsodium: argon2id password hashing and constant-time verification.
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]
        ),

        // libqrencode (Debian's libqrencode-dev): the QR code an authenticator app scans to
        // set up a second factor, drawn by the server as inline SVG.
        .systemLibrary(
            name: "CQRencode",
            pkgConfig: "libqrencode",
            providers: [.apt(["libqrencode-dev"])]
        ),

        // zxcvbn-c (Debian's libzxcvbn-dev): password strength estimation.
        .systemLibrary(
            name: "CZxcvbn",
            providers: [.apt(["libzxcvbn-dev"])]
        ),
        // zxcvbn for Swift: scores, matches, feedback. Knows nothing about sign-ups.
        .target(
            name: "Zxcvbn",
            dependencies: ["CZxcvbn"],
            exclude: ["Resources/generate-word-lists.py", "Resources/LICENSE-zxcvbn.txt"],
            resources: [.copy("Resources/passwords.txt"), .copy("Resources/names.txt")]
        ),

        // ICU's spoof checker (Debian's libicu-dev), through a C shim: Swift cannot call
        // ICU's version-renamed functions directly.
        .systemLibrary(
            name: "CICU",
            pkgConfig: "icu-i18n",
            providers: [.apt(["libicu-dev"])]
        ),
        .target(name: "UnicodeSpoofShims", dependencies: ["CICU"]),
        // ICU's MessageFormat and plural rules (C++, behind a C face): each language's own
        // plural forms ("1 minute", Polish's three forms, Arabic's six) and number formats.
        .target(name: "MessageFormatShims", dependencies: ["CICU"], linkerSettings: [.linkedLibrary("stdc++")]),
        // Is a username safe to show and compare? Invisible, bidi and mixed-script checks.
        .target(name: "UsernameSafety", dependencies: ["UnicodeSpoofShims"]),

        // libcurl (Debian's libcurl4-openssl-dev): calls to servers outside the process, with
        // C wrappers for its C-variadic options, and their Swift face with every cost bounded.
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        .target(name: "CurlShims", dependencies: ["CCurl"]),
        .target(name: "OutsideHTTP", dependencies: ["CurlShims"]),
        .target(name: "OutsideMail", dependencies: ["CurlShims"]),
        // OpenID Connect as a relying party: discovery, the provider's keys, the code's
        // exchange with PKCE and the ID token's checks. jwt-kit verifies the signatures (no
        // hand-written JOSE); every call out goes through OutsideHTTP's bounds.
        .target(
            name: "OpenIDConnect",
            dependencies: [
                "OutsideHTTP",
                "Locking",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // c-ares (Debian's libc-ares-dev): asynchronous DNS questions (can a domain receive mail?).
        .systemLibrary(
            name: "CAres",
            pkgConfig: "libcares",
            providers: [.apt(["libc-ares-dev"])]
        ),
        .target(name: "OutsideDNS", dependencies: ["CAres"]),

        // libcbor (Debian's libcbor-dev): CBOR decoding for WebAuthn (attestation objects, COSE
        // keys), and its Swift face with limits on size and depth.
        .systemLibrary(
            name: "CCbor",
            pkgConfig: "libcbor",
            providers: [.apt(["libcbor-dev"])]
        ),
        .target(name: "CBORDecoder", dependencies: ["CCbor"]),
        // WebAuthn's pieces: COSE keys, authenticator data, signatures (swift-crypto).
        .target(
            name: "WebAuthn",
            dependencies: [
                "CBORDecoder",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),

        // The wire vocabulary, Foundation only, shared by server and client. FormWire holds what
        // any live form says (requirement states, edit receipts, error bodies, SSE events);
        // SignupWire the sign-up's own snapshot, events and password strength.
        // The one clock the app runs by (wall time and delayed work), and the test clock.
        .target(name: "Clocks"),
        // The one lock box (`Locked`), Foundation only, for every module that guards state.
        .target(name: "Locking"),
        .target(name: "FormWire"),
        .target(name: "SignupWire", dependencies: ["FormWire"]),

        // Layer 1: the Swift face of libmicrohttpd. Knows HTTP and SSE, nothing about sign-up.
        .target(
            name: "MicroHTTPD",
            dependencies: ["CMicroHTTPD", "MicroHTTPDShims", "Clocks", "Locking"]
        ),

        // Layer 2: reactive validation for any form: rules as data, OpenCombine operators.
        .target(
            name: "ReactiveValidation",
            dependencies: [
                "FormWire",
                .product(name: "OpenCombineShim", package: "OpenCombine"),
                .product(name: "CombineSchedulers", package: "combine-schedulers"),
            ]
        ),

        // Layer 3: the sign-up domain: policy, view model, account store.
        .target(
            name: "SignupDomain",
            dependencies: [
                "ReactiveValidation",
                "FormWire",
                "SignupWire",
                "Zxcvbn",
                "UsernameSafety",
                "MessageFormatShims",
                "CSodium",
                .product(name: "OpenCombineShim", package: "OpenCombine"),
                .product(name: "CombineSchedulers", package: "combine-schedulers"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            resources: [.copy("Resources/policies"), .copy("Resources/i18n")]
        ),

        // Layer 3, the outside look-ups the rules may ask: Have I Been Pwned's range API
        // (OutsideHTTP) and mail domains over DNS (OutsideDNS), behind the domain's protocols.
        .target(
            name: "SignupLookups",
            dependencies: [
                "SignupDomain", "ReactiveValidation", "OutsideHTTP", "OutsideDNS",
                .product(name: "OpenCombineShim", package: "OpenCombine"),
            ]
        ),

        // Layer 3, the default engine: accounts in one SQLite file (GRDB), for one instance.
        .target(
            name: "SignupSQLite",
            dependencies: ["SignupDomain", .product(name: "GRDB", package: "GRDB.swift")]
        ),

        // Layer 3, another engine: accounts in PostgreSQL (postgres-nio's pooled client), for
        // several instances sharing one database.
        .target(
            name: "SignupPostgres",
            dependencies: [
                "SignupDomain",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // Layer 4, the web kernel: what every flow's handlers stand on and nothing about any
        // one flow: route rows and their table, the request a handler gets, refusals as pages
        // or JSON, the page core (Mustache, the shared context, languages, static files),
        // per-address limits, same-origin and return targets, the access line.
        .target(
            name: "WebKernel",
            dependencies: [
                "MicroHTTPD",
                "Locking",
                "FormWire",
                "SignupDomain",
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // Layer 4, identity services on the kernel: who is signed in (SignedInUsers, sessions'
        // cookies) and how recently (RecentSignIn), the second factor's seal, address proofs,
        // mails and webhooks through the durable outbox, provider cookies, passkey challenges.
        .target(
            name: "Identity",
            dependencies: [
                "WebKernel",
                "MicroHTTPD",
                "Locking",
                "Clocks",
                "FormWire",
                "SignupDomain",
                "OutsideHTTP",
                "OutsideMail",
                "WebAuthn",
                "OpenIDConnect",
                "CSodium",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),

        // Layer 4: the web app on the kernel: the router, identity services and the flows
        // (Flows/: live form, registration, login, recovery, settings, operations).
        .target(
            name: "SignupServer",
            dependencies: [
                "WebKernel",
                "Identity",
                "Locking",
                "MicroHTTPD",
                "FormWire",
                "SignupWire",
                "ReactiveValidation",
                "SignupDomain",
                "SignupLookups",
                "Clocks",
                "OutsideHTTP",
                "OutsideMail",
                "OutsideDNS",
                "WebAuthn",
                "OpenIDConnect",
                "CQRencode",
                "CSodium",
                .product(name: "OpenCombineShim", package: "OpenCombine"),
                .product(name: "CombineSchedulers", package: "combine-schedulers"),
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),

        // Layer 5: the thin executable.
        // The operator's settings, declared once (issue 55): the configuration file's reader
        // (Yams, for its line numbers), the environment and the flags by precedence, and the
        // reference and example generated from the declarations.
        .target(name: "OperatorSettings", dependencies: [.product(name: "Yams", package: "Yams")]),

        .executableTarget(
            name: "signup-server",
            dependencies: [
                "OperatorSettings",
                "SignupServer",
                "WebKernel",
                "Identity",
                "SignupDomain",
                "SignupSQLite",
                "SignupPostgres",
                "SignupLookups",
                "MicroHTTPD",
                "OutsideMail",
                "OutsideDNS",
                "WebAuthn",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),

        // The domain's typing path alone, for instruction counts under callgrind (Benchmarks/README.md).
        .executableTarget(
            name: "edit-path",
            dependencies: [
                "SignupDomain", "SignupWire", "ReactiveValidation",
                .product(name: "OpenCombineShim", package: "OpenCombine"),
                .product(name: "CombineSchedulers", package: "combine-schedulers"),
            ],
            path: "Benchmarks/EditPath"
        ),

        // libFuzzer targets (issue 57): every parser a stranger's bytes reach, one executable
        // that fuzzes the target it is started as. `make fuzz` builds it with
        // -sanitize=fuzzer,address in .build-fuzz (never the test build); the ordinary build
        // replays inputs through a target once each (Tests/Fuzz/README.md).
        .executableTarget(
            name: "signup-fuzz",
            dependencies: [
                "MicroHTTPD", "FormWire", "SignupWire", "ReactiveValidation", "SignupDomain", "SignupLookups",
                "SignupSQLite", "WebKernel", "Identity", "SignupServer", "OpenIDConnect", "OutsideDNS", "WebAuthn",
                "CBORDecoder", "UsernameSafety", "OperatorSettings", "LiveSignupClient",
                .product(name: "OpenCombineShim", package: "OpenCombine"),
                .product(name: "CombineSchedulers", package: "combine-schedulers"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Tests/Fuzz/Targets"
        ),

        // A client for programs: form sessions, edits, typed SSE events, the proof of work.
        // swift-crypto for the proof of work's SHA-256 (CryptoKit's API on every platform).
        .target(
            name: "LiveSignupClient",
            dependencies: ["FormWire", "SignupWire", "Locking", .product(name: "Crypto", package: "swift-crypto")]
        ),

        .testTarget(
            name: "ReactiveValidationTests",
            dependencies: [
                "ReactiveValidation",
                "HTTPTestSupport",
                .product(name: "OpenCombineShim", package: "OpenCombine"),
                .product(name: "CombineSchedulers", package: "combine-schedulers"),
            ]
        ),
        // What every account store must do, run by each engine's tests; and a throwaway
        // PostgreSQL cluster on loopback for the tests that need one.
        // A software passkey authenticator for whole ceremonies without a browser.
        .target(
            name: "WebAuthnTestSupport",
            dependencies: ["WebAuthn", .product(name: "Crypto", package: "swift-crypto")],
            path: "Tests/WebAuthnTestSupport"
        ),
        .target(
            name: "AccountStoreTestSupport",
            dependencies: ["SignupDomain", "HTTPTestSupport"],
            path: "Tests/AccountStoreTestSupport"
        ),
        .testTarget(
            name: "SignupSQLiteTests",
            dependencies: [
                "SignupSQLite", "SignupDomain", "AccountStoreTestSupport", "ReactiveValidation",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "OpenCombineShim", package: "OpenCombine"),
            ]
        ),
        .testTarget(
            name: "SignupPostgresTests",
            dependencies: ["SignupPostgres", "SignupDomain", "AccountStoreTestSupport", "HTTPTestSupport", "Locking"]
        ),
        .testTarget(
            name: "SignupDomainTests",
            dependencies: [
                "SignupDomain",
                "AccountStoreTestSupport",
                "ReactiveValidation",
                "HTTPTestSupport",
                "Clocks",
                "Locking",
                "OutsideDNS",
                "SignupLookups",
                "LiveSignupClient",
                .product(name: "OpenCombineShim", package: "OpenCombine"),
                .product(name: "CombineSchedulers", package: "combine-schedulers"),
            ]
        ),
        .testTarget(name: "WireTests", dependencies: ["FormWire", "SignupWire"]),
        .testTarget(
            name: "OpenIDConnectTests",
            dependencies: ["OpenIDConnect", "OutsideHTTP", "MicroHTTPD", "Clocks", .product(name: "JWTKit", package: "jwt-kit"),
                           .product(name: "Crypto", package: "swift-crypto")]
        ),
        .testTarget(name: "CBORDecoderTests", dependencies: ["CBORDecoder", "HTTPTestSupport"]),
        .testTarget(
            name: "WebAuthnTests",
            dependencies: ["WebAuthn", "CBORDecoder", .product(name: "Crypto", package: "swift-crypto"),
                           .product(name: "_CryptoExtras", package: "swift-crypto")],
            exclude: ["Fixtures/README.md", "Fixtures/capture.py"],
            resources: [.copy("Fixtures/chromium-virtual-authenticator.json")]
        ),
        .testTarget(name: "LiveSignupClientTests", dependencies: ["LiveSignupClient", "FormWire", "SignupWire"]),
        .testTarget(name: "UsernameSafetyTests", dependencies: ["UsernameSafety"]),
        .testTarget(
            name: "ZxcvbnTests",
            dependencies: ["Zxcvbn"],
            exclude: ["Reference/generate-reference.py"],
            resources: [.copy("Reference/reference-scores.tsv")]
        ),
        // Raw sockets for tests that check exact bytes or act as several client addresses.
        .target(name: "HTTPTestSupport", dependencies: ["Clocks"], path: "Tests/HTTPTestSupport"),
        .testTarget(name: "MicroHTTPDTests", dependencies: ["MicroHTTPD", "Locking", "HTTPTestSupport"]),
        .testTarget(name: "OperatorSettingsTests", dependencies: ["OperatorSettings"]),
        .testTarget(
            name: "SignupServerTests",
            dependencies: [
                "SignupServer", "WebKernel", "Identity", "Locking", "LiveSignupClient", "MicroHTTPD", "SignupDomain", "HTTPTestSupport", "WebAuthnTestSupport",
                "WebAuthn",
                "AccountStoreTestSupport", "SignupSQLite", "SignupPostgres", "SignupLookups", "OutsideMail", "Clocks",
                // To break one table of a test's database on purpose (a store that half answers).
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "OpenCombineShim", package: "OpenCombine"),
            ]
        ),
    ]
)
