# LiveSignup: `make run` starts the server, `make test` runs every test.
SHELL := /bin/bash
APT_PACKAGES := libmicrohttpd-dev libsqlite3-dev libsodium-dev libzxcvbn-dev libicu-dev libcurl4-openssl-dev libc-ares-dev libcbor-dev libqrencode-dev pkg-config
HOST ?= 127.0.0.1
PORT ?= 8080
DATABASE ?= data/livesignup.sqlite
# make run writes mails here instead of sending them: open the newest .eml for the code.
MAIL_DIR ?= data/mail
SWIFT_BUILD_FLAGS ?=
PREFIX ?= /usr/local
# nginx: the tests that run the shipped proxy configs in front of one or two servers;
# postgresql: the PostgreSQL account store's tests and the two-instance test (each starts its
# own cluster on loopback; the packaged cluster is not used); openssl: the mail test's own
# certificate for its SMTP server's STARTTLS; iproute2: `ip`, with which the plain-SMTP test
# finds (or adds) an address of this machine that is not loopback; oathtool: a TOTP we did
# not write, which the second factor's codes are held to; systemd: systemd-analyze, which checks
# the shipped unit; python3-icu: ICU through PyICU, the reference the dates and lists are held
# to (Tests/Reference/icu_reference.py).
TEST_APT_PACKAGES := nginx-light postgresql openssl iproute2 oathtool systemd python3-icu

BROWSER_APT_PACKAGES := chromium chromium-driver apache2 libapache2-mod-auth-openidc
BROWSER_PIP_PACKAGES := selenium pytest pytest-xdist standardwebhooks aiosmtpd dnslib altcha webauthn pyotp oidc-provider-mock joserfc authlib requests prometheus-client

# Installs those of the listed Debian packages that are missing (with sudo unless root).
define apt_install
missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
if [ -n "$$missing" ]; then \
	echo "Installing:$$missing"; \
	SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
fi
endef

.PHONY: bench bench-tests deps test-deps browser-deps build release run install test test-browser browser-tests clean screenshot fuzz fuzz-build fuzz-check fuzz-seeds

# Installs the system libraries the build needs, only when something is missing.
deps:
	@$(call apt_install,$(APT_PACKAGES))

# System packages the tests need beyond the build's.
test-deps:
	@$(call apt_install,$(TEST_APT_PACKAGES))

build: deps
	swift build $(SWIFT_BUILD_FLAGS)

release: deps
	swift build -c release --product signup-server $(SWIFT_BUILD_FLAGS)

# The release build, serving http://$(HOST):$(PORT) with a few demo names taken.
run: release
	@echo "Mails (codes to prove addresses) are written to $(MAIL_DIR)/ as .eml files."
	"$$(swift build -c release --show-bin-path)/signup-server" --host $(HOST) --port $(PORT) --database $(DATABASE) --seed-demo --mail-dir $(MAIL_DIR)

# PREFIX/bin/signup-server (with its resource bundles beside it, where SwiftPM looks) and
# PREFIX/share/livesignup/{Public,Templates}, where the binary finds them.
install: release
	@bin="$$(swift build -c release --show-bin-path)"; \
	install -d "$(DESTDIR)$(PREFIX)/bin" "$(DESTDIR)$(PREFIX)/share/livesignup"; \
	install -m 755 "$$bin/signup-server" "$(DESTDIR)$(PREFIX)/bin/signup-server"; \
	for bundle in "$$bin"/*.resources; do \
		rm -rf "$(DESTDIR)$(PREFIX)/bin/$$(basename "$$bundle")"; \
		cp -R "$$bundle" "$(DESTDIR)$(PREFIX)/bin/"; \
	done; \
	rm -rf "$(DESTDIR)$(PREFIX)/share/livesignup/Public" "$(DESTDIR)$(PREFIX)/share/livesignup/Templates"; \
	cp -R Public Templates "$(DESTDIR)$(PREFIX)/share/livesignup/"; \
	echo "Installed $(DESTDIR)$(PREFIX)/bin/signup-server and $(DESTDIR)$(PREFIX)/share/livesignup"

# make test installs every prerequisite (nginx, PostgreSQL, …), so here a test that would skip
# for a missing one fails instead, naming it (LIVESIGNUP_REQUIRE_ALL; CI=true does the same).
# The measurements (XCTest classes named …Measurements, browser tests marked bench) are left
# out: make bench runs them.
test: export LIVESIGNUP_REQUIRE_ALL = 1
test: deps test-deps browser-deps
	swift build --build-tests $(SWIFT_BUILD_FLAGS)
	@# Bounded: the XCTest run takes about 3 minutes; if the test process ever crashed and
	@# left a child holding its output, swift test would otherwise wait for CI's own limit.
	@# A crash's backtrace is kept to the crashed thread, and what failed is repeated last:
	@# CI shows only the end of the output.
	@set -o pipefail; SWIFT_BACKTRACE=threads=crashed,registers=none,images=none \
		timeout --kill-after=30 20m swift test --skip-build --disable-swift-testing --skip Measurements $(SWIFT_BUILD_FLAGS) 2>&1 \
		| tee .build/xctest.log || { status=$$?; echo "XCTest run failed ($$status). The last test started, and every failure:"; \
		grep -E "^Test Case .* started" .build/xctest.log | tail -n 1; \
		grep -E "error: |Fatal error|Crash|signal" .build/xctest.log | head -n 40; exit $$status; }
	$(MAKE) --no-print-directory browser-tests
	$(MAKE) --no-print-directory fuzz-check

# Only the real-browser tests (headless Chromium + Selenium under pytest).
test-browser: deps test-deps browser-deps
	swift build $(SWIFT_BUILD_FLAGS)
	$(MAKE) --no-print-directory browser-tests

# Two workers (pytest-xdist), each file's tests in one of them: much of a browser test is
# waiting on Chromium, the server or a debounce, so two run in about 60 % of the time of one.
# Bounded (issue 53): the suite takes about 5 minutes; a hang ends here, not at CI's limit.
# -rs lists every skipped test with its reason.
BROWSER_WORKERS ?= 2
browser-tests:
	LIVESIGNUP_SERVER="$$(swift build $(SWIFT_BUILD_FLAGS) --show-bin-path)/signup-server" \
		timeout --kill-after=30 30m python3 -m pytest -q -rs -p no:benchmark -n $(BROWSER_WORKERS) --dist loadfile Tests/Browser

# Chromium and its driver from apt; Selenium, pytest and axe-core (inside
# axe-playwright-python, installed without its Playwright dependency) from PyPI.
browser-deps:
	@$(call apt_install,$(BROWSER_APT_PACKAGES))
	@python3 -c "import selenium, pytest, xdist, standardwebhooks, aiosmtpd, dnslib, altcha, webauthn, pyotp, oidc_provider_mock, joserfc, authlib, requests, prometheus_client" 2>/dev/null || python3 -m pip install -q $(BROWSER_PIP_PACKAGES)
	@python3 -c "import axe_playwright_python" 2>/dev/null || python3 -m pip install -q --no-deps axe-playwright-python

# Issue 11's standard scenarios (typing, saturation, idle sessions, 19,000 streams, the load
# generator's own ceiling), written as one table into Benchmarks/README.md. Side by side with
# the peer, interleaved: make bench PEER=../shared/peers/hummingbird/signup-peer/.build/release/signup-peer
# RUNS=3 and SCENARIOS=typing,idle narrow or widen it. Nothing else may run on the machine.
RUNS ?= 2
# The Hummingbird peer, when it is built beside the project (../shared/peers/hummingbird).
PEER ?= $(wildcard ../shared/peers/hummingbird/signup-peer/.build/release/signup-peer)
SCENARIOS ?= ceiling,typing,connection,saturation,idle,streams,crowd,instances
bench: bench-tests
	swift build -c release --scratch-path .build-bench --product signup-server $(SWIFT_BUILD_FLAGS)
	$(MAKE) --no-print-directory -C Benchmarks/loadgen
	@python3 -c "import aiohttp" 2>/dev/null || python3 -m pip install -q aiohttp
	python3 Benchmarks/bench.py "$$(swift build -c release --scratch-path .build-bench --show-bin-path)/signup-server" \
		$(if $(PEER),--peer "$(PEER)") --runs $(RUNS) --scenarios $(SCENARIOS) --write-readme

# The measurements the test suites leave out (issue 53): latency ratios, medians and price
# tables, each recording its figures in Benchmarks/figures/ (commit them with what they measure).
bench-tests: deps test-deps browser-deps
	swift build --build-tests $(SWIFT_BUILD_FLAGS)
	swift test --skip-build --disable-swift-testing --filter Measurements $(SWIFT_BUILD_FLAGS)
	LIVESIGNUP_SERVER="$$(swift build $(SWIFT_BUILD_FLAGS) --show-bin-path)/signup-server" \
		timeout --kill-after=30 30m python3 -m pytest -q -rs --bench Tests/Browser

clean:
	rm -rf .build

# Regenerates docs/screenshot.png (needs chromium, chromium-driver and pip's selenium).
screenshot: build
	python3 docs/screenshot.py .build/debug/signup-server docs/screenshot.png

# Fuzzing (issue 57, Tests/Fuzz/README.md): every parser a stranger's bytes reach, under
# libFuzzer with AddressSanitizer, built in its own scratch path (never the test build), in
# release mode (six times the executions of a debug build).
FUZZ_SCRATCH := .build-fuzz
FUZZ_BUILD_FLAGS := -c release --scratch-path $(FUZZ_SCRATCH) -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING
FUZZ_BINARY = "$$(swift build $(FUZZ_BUILD_FLAGS) --show-bin-path)/signup-fuzz"
TARGET ?=
FUZZ_TIME ?=
fuzz-build: deps
	swift build $(FUZZ_BUILD_FLAGS) --product signup-fuzz $(SWIFT_BUILD_FLAGS) 2>&1 | grep -v "Cannot export local symbol '__asan_" ; exit $${PIPESTATUS[0]}

# make fuzz: every target for FUZZ_TIME seconds each (default 60), or RUNS executions each; TARGET=name
# for one (make fuzz TARGET=cookie RUNS=1000000). New coverage is merged into the corpus.
fuzz: fuzz-build
	python3 Tests/Fuzz/fuzz.py $(FUZZ_BINARY) --merge $(if $(TARGET),--targets $(TARGET)) \
		$(if $(filter command line,$(origin RUNS)),--runs $(RUNS)) $(if $(FUZZ_TIME),--seconds $(FUZZ_TIME))

# In make test: every target runs its corpus (the regression inputs) and fuzzes briefly; all
# together stay within two minutes on two cores.
fuzz-check: fuzz-build
	timeout --kill-after=30 5m python3 Tests/Fuzz/fuzz.py $(FUZZ_BINARY) --seconds 6 --jobs 2 --seed 1

# The seeds: the hand-made ones and those the targets mint (minted tokens, recorded passkeys).
fuzz-seeds:
	swift build --product signup-fuzz $(SWIFT_BUILD_FLAGS)
	python3 Tests/Fuzz/write_seeds.py
	@for target in $$("$$(swift build --show-bin-path)/signup-fuzz" list | cut -f1); do \
		"$$(swift build --show-bin-path)/signup-fuzz" seed $$target Tests/Fuzz/corpus/$$target; done
