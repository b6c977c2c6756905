# Thin wrapper over CMake. `make run` and `make test` are the README's quick start:
# both install missing Debian build dependencies first.
BUILD   ?= build
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
# Ninja schedules the build and prints one line a step (no make recursion, no
# "Entering directory" lines); ccache makes a second build of the same sources cheap.
DEB_DEPS = cmake ninja-build ccache g++ make pkg-config libuv1-dev libtomlplusplus-dev \
           libcli11-dev nlohmann-json3-dev doctest-dev libre2-dev libhttp-parser-dev
# Tools the integration tests use (python3 serves http probes; systemd-notify, setpriv
# and unshare exercise sd_notify, peer credentials and PID 1; promtool checks the
# metrics; dpkg-dev and lintian build and check the .deb; mandoc lints the man pages;
# zsh and fish run pkitctl's completions; tmux gives `pkitctl top` a terminal;
# shellcheck checks the bash completion; python3-yaml reads the Kubernetes manifests). The fuzz corpora replay under g++'s
# sanitizers; `make fuzz` installs clang itself.
TEST_DEPS = python3 systemd util-linux procps socat prometheus dpkg-dev lintian mandoc zsh fish \
            tmux shellcheck python3-yaml gunicorn
# dpkg-shlibdeps computes the package's Depends; lintian checks it (make test too).
PACKAGE_DEPS = dpkg-dev
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all build build-daemon deps test-deps package-deps run test bench deb fuzz clean \
        image-check

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
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo

# pkitd, pkitctl and the test suites (not the benchmarks: `make bench`).
build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# Only what `make run` runs: pkitd and pkitctl, not the tests and benchmarks.
build-daemon: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target pkitd pkitctl

run: build-daemon
	mkdir -p $(BUILD)/run
	PKIT_LOG_DIR=$(abspath $(BUILD)/run/logs) $(BUILD)/daemon/pkitd --config examples --socket $(BUILD)/run/pkitd.sock

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

bench: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target benchmarks
	$(BUILD)/bench/run-benchmarks

# `make fuzz`: every tests/fuzz/fuzz_TARGET.cpp built with libFuzzer, ASan and UBSan in
# $(FUZZ_BUILD), then run one after the other for FUZZ_SECONDS each, from the seed
# corpus (tests/fuzz/corpus/TARGET/, and crashes/TARGET/ if present); new inputs go to
# $(FUZZ_BUILD)/corpus/TARGET/, a crashing input to $(FUZZ_BUILD)/crashes/TARGET/ (copy
# it into tests/fuzz/crashes/TARGET/ to keep it replayed by ctest). Exits non-zero if
# any target found something (a crash, a sanitizer finding, an input taking over
# 25 s). clang 16 at least: clang 14 cannot compile std::expected.
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 600
FUZZ_CC      ?= clang-16
FUZZ_CXX     ?= clang++-16
FUZZ_DEPS     = clang-16 libclang-rt-16-dev libfuzzer-16-dev
FUZZ_TARGETS ?= $(patsubst tests/fuzz/fuzz_%.cpp,%,$(wildcard tests/fuzz/fuzz_*.cpp))

fuzz: deps
	@missing=$$(for p in $(FUZZ_DEPS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing fuzzing dependencies:" $$missing; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi
	cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPKIT_FUZZ=ON \
	      -DCMAKE_C_COMPILER=$(FUZZ_CC) -DCMAKE_CXX_COMPILER=$(FUZZ_CXX)
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target $(addprefix pkit_fuzz_,$(FUZZ_TARGETS))
	@failed=; for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$t $(FUZZ_BUILD)/crashes/$$t; \
	  seeds=tests/fuzz/corpus/$$t; [ -d tests/fuzz/crashes/$$t ] && seeds="$$seeds tests/fuzz/crashes/$$t"; \
	  dict=; [ -f tests/fuzz/dict/$$t.dict ] && dict=-dict=tests/fuzz/dict/$$t.dict; \
	  echo "== fuzzing $$t for $(FUZZ_SECONDS) s"; \
	  $(FUZZ_BUILD)/tests/fuzz/pkit_fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    -timeout=25 -artifact_prefix=$(FUZZ_BUILD)/crashes/$$t/ $$dict $(FUZZ_BUILD)/corpus/$$t $$seeds \
	    || failed="$$failed $$t"; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzzing found problems in:$$failed (see $(FUZZ_BUILD)/crashes/)"; exit 1; fi

# `make image-check`: packaging/Dockerfile.example built with podman from a clean Debian
# base (made with debootstrap, since no image registry is reached; kept with podman's
# layer cache in $(BUILD)/image-check), then run: pkitd as PID 1, healthy, exit 0 on
# SIGTERM. Minutes rather than seconds, so not part of `make test`, whose
# packaging-dockerfile test configures the image's sources with only its packages.
IMAGE_DEPS = podman runc debootstrap python3

image-check:
	@missing=$$(for p in $(IMAGE_DEPS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing image check tools:" $$missing; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi
	$(SUDO) packaging/check-image --cache $(BUILD)/image-check

clean:
	rm -rf $(BUILD)
