#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine. Idempotent: installs only what is missing,
# configures once, rebuilds what changed.
#
#   ./setup.sh demo    install, build, and run `llmwatch demo`
#   ./setup.sh test    install, build, and run every test: unit, integration and install tests
#                      on the release build, then the unit tests again under AddressSanitizer +
#                      UndefinedBehaviorSanitizer (clang, build-asan) with every libFuzzer
#                      target for LLMWATCH_FUZZ_SECONDS (default 15) each; the integration
#                      tests there too with LLMWATCH_ASAN_INTEGRATION=1 (not on CI: 13 min)
#   ./setup.sh build   install and build only
#   ./setup.sh loaded [REGEX]
#                      the integration tests (or those matching REGEX) under CPU load, again
#                      and again: stress-ng on every core while ctest repeats them until one
#                      fails, LLMWATCH_REPEAT times (default 5). Not part of `test`: it proves
#                      the suite waits on conditions, not on time, and takes long.
set -euo pipefail
cd "$(dirname "$0")"
mode=${1:-build}
build_dir=${LLMWATCH_BUILD_DIR:-build}

# What the build and the demo need: the compiler, the libraries, and a Slurm to run on.
demo_packages=(
  cmake make g++ pkg-config
  libboost-dev libboost-filesystem-dev libspdlog-dev libfmt-dev libtomlplusplus-dev
  libcurl4-openssl-dev nlohmann-json3-dev libcli11-dev libsqlite3-dev libsimdjson-dev
  libjemalloc-dev
  slurmctld slurmd slurm-client munge python3
)
# What only the tests need (the larger half of the download: a database for accounting,
# Prometheus and Alertmanager, a debug Python for stack dumps, clang for the sanitizer build,
# a headless browser that opens the goodput report; LLVM's linker, which CMake uses where it is
# found: it links a sanitizer executable in 2 s, where GNU ld took 9).
test_packages=(
  clang-format clang libclang-rt-14-dev lld libgtest-dev libgmock-dev sqlite3
  slurmdbd mariadb-server
  python3-aiosmtpd prometheus prometheus-alertmanager
  gdb python3.11-dbg
  fuse python3-fusepy e2fsprogs
  tmux stress-ng
  chromium
)
packages=("${demo_packages[@]}")
[ "$mode" = demo ] || packages+=("${test_packages[@]}")

sudo_if_needed() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_if_needed apt-get update -qq
  # The Debian packages start system slurm/munge/prometheus/alertmanager daemons; llmwatch never uses
  # them (tests and the demo run their own), so keep them from starting.
  printf '#!/bin/sh\nexit 101\n' | sudo_if_needed tee /usr/sbin/policy-rc.d >/dev/null
  sudo_if_needed chmod +x /usr/sbin/policy-rc.d
  sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  sudo_if_needed rm -f /usr/sbin/policy-rc.d
fi

# The demo builds llmwatch alone: no test suite (GoogleTest is a test package).
tests=ON
[ "$mode" = demo ] && ! [ -f "$build_dir/CMakeCache.txt" ] && tests=OFF
# A fresh build compiles its files in batches of 8 per translation unit (CMake's unity build):
# each batch parses the headers its files share once, and on CI's 2 cores that was most of the
# build. A name in an anonymous namespace must then be unique among the files of its batch
# (neighbours in the target's sorted list): the compiler or structure.NoNameTwiceInAUnityBatch
# fails on one that is not. A build directory made by hand (`cmake -S . -B build`) compiles
# file by file, so an edit rebuilds one file.
unity=(-DCMAKE_UNITY_BUILD=ON)
if ! [ -f "$build_dir/CMakeCache.txt" ]; then
  cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLLMWATCH_TESTS=$tests "${unity[@]}"
elif [ "$mode" != demo ] && grep -q '^LLMWATCH_TESTS:BOOL=OFF' "$build_dir/CMakeCache.txt"; then
  cmake -S . -B "$build_dir" -DLLMWATCH_TESTS=ON >/dev/null  # a demo's build dir, now tested
fi
[ -f "$build_dir/CMakeCache.txt" ] ||
  cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${unity[@]}"
if [ "$mode" = demo ]; then
  cmake --build "$build_dir" -j "$(nproc)" --target llmwatch
else
  cmake --build "$build_dir" -j "$(nproc)"
fi

case "$mode" in
  build) ;;
  demo) exec "$build_dir/llmwatch" demo ;;
  test)
    # Integration tests start Slurm daemons, which need root.
    as_root=()
    [ "$(id -u)" -ne 0 ] && as_root=(sudo)
    # Identity tests submit jobs as an ordinary user, as on a real cluster.
    id llmwatch-itest >/dev/null 2>&1 ||
      sudo_if_needed useradd --system --no-create-home --shell /usr/sbin/nologin llmwatch-itest
    status=0
    # CI has 2 cores and keeps the suite well under 30 minutes (a fresh clone here: 1,240 s).
    # The two builds are most of the CPU and the tests most of the wall time. Each test runs
    # once on CI: the integration tests under the sanitizers took 802 s wall and 1,170 s of CPU
    # (an instrumented llmwatch costs 0.2 s of CPU to start, and the tests start it thousands of
    # times), and running them in both builds made CI take 41 minutes. The sanitizer build is
    # made before the tests, not beside them: at nice 19 beside the release tests it got little
    # CPU (it ended 247 s after them, on the critical path) and slowed them (897 s, 772 alone).
    # `./setup.sh loaded` runs the integration tests again and again, under load.
    asan_dir=${LLMWATCH_ASAN_BUILD_DIR:-build-asan}
    logs=$(mktemp -d)
    # An interrupted run leaves nothing running. `|| true`: under set -e, a kill with no job
    # left would fail the trap and exit 2 after every test passed.
    trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$logs"' EXIT
    # Six processes for the sanitizer unit tests, not one per test (tests/CMakeLists.txt).
    if [ -f "$asan_dir/CMakeCache.txt" ]; then
      cmake -S . -B "$asan_dir" -DLLMWATCH_UNIT_SHARDS=6 >/dev/null
    else
      CXX=clang++ cmake -S . -B "$asan_dir" -DCMAKE_BUILD_TYPE=Debug -DLLMWATCH_FUZZ=ON \
        -DLLMWATCH_FUZZ_SECONDS="${LLMWATCH_FUZZ_SECONDS:-15}" -DLLMWATCH_UNIT_SHARDS=6 \
        "${unity[@]}" >/dev/null
    fi
    # Only what runs there: the unit tests and the fuzzers (the integration tests' executable
    # and llmwatch itself are a tenth of the build).
    asan_labels=unit asan_targets=(llmwatch_tests fuzzers)
    if [ "${LLMWATCH_ASAN_INTEGRATION:-0}" = 1 ]; then
      asan_labels="unit|integration" asan_targets+=(llmwatch_integration_tests)
    fi
    echo "setup: making the sanitizer build ($asan_dir) before the tests"
    asan_built=1
    cmake --build "$asan_dir" -j "$(nproc)" --target "${asan_targets[@]}" \
      >"$logs/asan-build.log" 2>&1 || asan_built=0
    # Three at a time on 2 cores: each integration test starts its own cluster on its own
    # ports and mostly waits on it, so the suite's wall time was the sum of the tests' over two
    # (CI took 1,717 s of its 30 minutes at two).
    test_jobs=${LLMWATCH_TEST_JOBS:-3}
    # ctest starts the tests it knows to be longest first (its cost data, kept in the build
    # dir). A fresh one knows none: the 2-minute goodput test then started near the end and
    # ran on alone. tests/ctest-costs.txt seeds it with the tests' measured times.
    seed_costs() {
      local f=$1/Testing/Temporary/CTestCostData.txt
      [ -f "$f" ] || { mkdir -p "${f%/*}" && grep -v '^#' tests/ctest-costs.txt >"$f"; }
    }
    seed_costs "$build_dir"
    "${as_root[@]}" ctest --test-dir "$build_dir" -j "$test_jobs" --output-on-failure \
      --timeout 600 || status=1
    if [ "$asan_built" = 0 ]; then
      status=1
      echo "setup: the sanitizer build ($asan_dir) failed:"
      tail -n 60 "$logs/asan-build.log"
      exit $status
    fi
    sanitizers=(env ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
                UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1)
    seed_costs "$asan_dir"
    asan_ctest=("${as_root[@]}" "${sanitizers[@]}" ctest --test-dir "$asan_dir"
                --output-on-failure --timeout 600)
    # Fuzz targets are independent: two at a time, each for a fixed time, at nice 19 beside
    # the unit tests; their output is printed when they end, not mixed in.
    nice -n 19 "${asan_ctest[@]}" -j 2 -L fuzz >"$logs/fuzz.log" 2>&1 &
    fuzz=$!
    "${asan_ctest[@]}" -j "$test_jobs" -L "$asan_labels" || status=1
    wait "$fuzz" || status=1
    echo "setup: the fuzz targets, run beside the sanitizer tests:"
    cat "$logs/fuzz.log"
    exit $status
    ;;
  loaded)
    as_root=()
    [ "$(id -u)" -ne 0 ] && as_root=(sudo)
    id llmwatch-itest >/dev/null 2>&1 ||
      sudo_if_needed useradd --system --no-create-home --shell /usr/sbin/nologin llmwatch-itest
    select=(-L integration)
    [ -n "${2:-}" ] && select=(-R "$2")
    stress-ng --cpu "$(nproc)" --timeout 0 --quiet &
    load=$!
    trap 'kill "$load" 2>/dev/null' EXIT
    echo "setup: load: stress-ng --cpu $(nproc) (pid $load)"
    "${as_root[@]}" ctest --test-dir "$build_dir" "${select[@]}" -j 2 --output-on-failure \
      --timeout 600 --repeat "until-fail:${LLMWATCH_REPEAT:-5}"
    ;;
  *) echo "usage: $0 [build|demo|test|loaded [REGEX]]" >&2; exit 2 ;;
esac
