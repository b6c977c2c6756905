# Thin wrapper over CMake. `make run` and `make test` are the README's quick start:
# both install missing Debian build dependencies first.
BUILD   ?= build
JOBS    ?= 2
DEB_DEPS = cmake g++ make pkg-config libuv1-dev libtomlplusplus-dev libcli11-dev \
           nlohmann-json3-dev doctest-dev libre2-dev libhttp-parser-dev
# Tools the integration tests use (python3 serves http probes; systemd-notify, setpriv
# and unshare exercise sd_notify, peer credentials and PID 1; promtool checks the
# metrics; clang and libFuzzer build the fuzz targets for `make fuzz`; dpkg-dev and
# lintian build and check the .deb; mandoc lints the man pages).
TEST_DEPS = python3 systemd util-linux procps socat prometheus clang libfuzzer-14-dev \
            dpkg-dev lintian mandoc
# dpkg-shlibdeps computes the package's Depends; lintian checks it (make test too).
PACKAGE_DEPS = dpkg-dev
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all build build-daemon deps test-deps package-deps run test bench deb clean

all: build

deps:
	@missing=$$(for p in $(DEB_DEPS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing build dependencies:" $$missing; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

test-deps:
	@missing=$$(for p in $(TEST_DEPS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing test dependencies:" $$missing; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing || \
	    echo "warning: could not install $$missing; tests that need them are skipped"; \
	fi

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# Only what `make run` runs: pkitd and pkitctl, not the tests and benchmarks.
build-daemon: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target pkitd pkitctl

run: build-daemon
	mkdir -p $(BUILD)/run
	$(BUILD)/daemon/pkitd --config examples --socket $(BUILD)/run/pkitd.sock

test: build test-deps
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 300

# The Debian package (CPack): $(BUILD)/package/pkit_<version>_<arch>.deb.
package-deps:
	@missing=$$(for p in $(PACKAGE_DEPS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing packaging tools:" $$missing; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

deb: deps package-deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target package_deb

bench: build
	$(BUILD)/bench/run-benchmarks

clean:
	rm -rf $(BUILD)
