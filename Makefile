# LiveSignup: `make run` starts the server, `make test` runs every test.
SHELL := /bin/bash
APT_PACKAGES := libmicrohttpd-dev libsqlite3-dev libsodium-dev libzxcvbn-dev libicu-dev pkg-config
HOST ?= 127.0.0.1
PORT ?= 8080
DATABASE ?= data/livesignup.sqlite
SWIFT_BUILD_FLAGS ?=

.PHONY: deps build run test clean screenshot

# Installs the system libraries the build needs, only when something is missing.
deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "Installing:$$missing"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

build: deps
	swift build $(SWIFT_BUILD_FLAGS)

run: build
	swift run $(SWIFT_BUILD_FLAGS) signup-server --host $(HOST) --port $(PORT) --database $(DATABASE) --seed-demo

test: deps
	swift build --build-tests $(SWIFT_BUILD_FLAGS)
	swift test --skip-build --disable-swift-testing $(SWIFT_BUILD_FLAGS)

clean:
	rm -rf .build

# Regenerates docs/screenshot.png (needs chromium, chromium-driver and pip's selenium).
screenshot: build
	python3 docs/screenshot.py .build/debug/signup-server docs/screenshot.png
