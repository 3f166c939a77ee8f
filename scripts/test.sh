#!/usr/bin/env bash
# The whole test suite, locally and in CI (.ci/run calls this), on a fresh Debian/Ubuntu
# machine with only rustup and gcc. It installs what it lacks, then runs:
#   1. native x86-64: unit tests, ABI conformance against gcc, hardening checks, doc tests,
#      NCCL's plugins (tests/plugin_layouts.rs: every table's layout against the transcribed
#      headers; tests/plugins.rs: the network test bench through the project's TCP plugin and
#      its misbehaving variants, NCCL_NET_PLUGIN's rules on real files; doctor and net-bench in
#      tests/cli.rs, with the Rust tuner and profiler plugins of examples/),
#      the nccl-trampoline command (feature cli) against the C stand-in and the real NCCL,
#      the tracing feature's events (tests/tracing.rs, against the stand-in),
#      the embedding examples, the README's snippets in new projects, the layers
#      (tests/layering.rs: no import points up, no module cycle), rustfmt, clippy;
#      then the ABI conformance suite and the callback tests again with clang as the oracle;
#   2. AArch64 under `qemu-aarch64 -cpu max` (BTI and PAC enforced): the same tests and
#      examples, and `nccl-trampoline selftest`; the ABI conformance suite and the callback
#      tests again with `clang --target=aarch64-linux-gnu` (the cross gcc's sysroot) as the
#      oracle; riscv64 (LP64D) under `qemu-riscv64`: the same tests (conformance, callbacks,
#      hardening, no-alloc, unit), examples, clippy, the selftest (no NCCL exists for riscv64:
#      its stage says skip), and the conformance suite and the callback tests again with
#      `clang --target=riscv64-linux-gnu` as the oracle;
#   3. the facade against the REAL libnccl.so.2 of the nvidia-nccl-cu12 wheels (no GPU needed),
#      natively (newest and an old x86_64 build) and under qemu (newest aarch64 build); the
#      wheels are fetched once into ~/.cache/nccl-trampoline by scripts/fetch-nccl.sh;
#      then real launchers (scripts/launchers.sh): Open MPI's and MPICH's mpirun with -np 2
#      and 4, and srun on a one-host Slurm, each running examples/world with the real NCCL
#      (one id on every rank, NCCL's own CUDA error) and perf on the stand-ins;
#   4. the public API against its committed listing (docs/public-api.txt, scripts/public-api.sh),
#      the facade, host-API, fault-model and plugin tests under AddressSanitizer (nightly, the C
#      stand-ins and test plugins instrumented too, with a negative control that must fail), the pure modules under
#      Miri, and every cargo-fuzz target for FUZZ_SECONDS (default 6) each (scripts/fuzz.sh);
#   5. `cargo check` for targets without a trampoline (they must build and return Unsupported);
#   6. the benchmark compiles (it is run by hand: see docs/perf.md);
#   7. the MSRV of the library and of each feature, with exactly that toolchain (MSRV_CHECKS),
#      and what `cargo package` ships.
# Environment: NCCL_TRAMPOLINE_FUZZ_SEED / NCCL_TRAMPOLINE_FUZZ_COUNT steer the random
# signatures (default seed 0x5eed2026, 10000 signatures; the second oracle under qemu
# QEMU_CLANG_SIGNATURES, 5000), NCCL_TRAMPOLINE_CALLBACK_COUNT the random callback signatures
# (10000 here; clang natively CLANG_CALLBACKS, 5000, and under qemu QEMU_CLANG_CALLBACKS, 2000;
# 2000 in a plain `cargo test` and the quick tier), NCCL_TRAMPOLINE_VARIADIC_COUNT the random
# variadic lists (500); FUZZ_SECONDS the time of each cargo-fuzz target (default 6);
# SKIP_INSTALL=1 skips step 0; QUICK=1 runs only the quick tier (rustfmt, native tests and
# clippy, a few minutes) and stops. Each step prints when it started ([N s]): where the time
# goes.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step says when it started, in seconds since the run began: where the time goes.
step() { printf '\n==> [%d s] %s\n' "$SECONDS" "$*"; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

AARCH64=aarch64-unknown-linux-gnu
RISCV64=riscv64gc-unknown-linux-gnu
CHECK_TARGETS=(x86_64-apple-darwin x86_64-pc-windows-gnu)
# The nightly of the sanitizer and Miri runs, pinned so a new nightly cannot break CI.
NIGHTLY=${NCCL_TRAMPOLINE_NIGHTLY:-nightly-2026-10-29}
HOST=x86_64-unknown-linux-gnu
CARGO_FUZZ=0.13.2
# Seconds each fuzz target runs (scripts/fuzz.sh).
export FUZZ_SECONDS=${FUZZ_SECONDS:-6}
# The minimum supported Rust: "toolchain|feature|cargo check arguments", each checked with
# exactly that toolchain (`--locked`: Cargo.lock's dependency versions). The library's is
# Cargo.toml's rust-version; the README's feature table states every one, and the MSRV step
# fails if it disagrees. A change that needs a newer Rust raises its line here, the README's
# row and, for the library, rust-version. Found by building with older toolchains: 1.78 fails
# on the inline `const` blocks of src/engine/typed.rs (and 1.76 in thiserror 2); half 2.7 declares
# 1.81, clap 4.6 1.85 (edition 2024; criterion brings it to the bench feature), libloading 0.9 (cudarc 0.19) 1.88, and cargo refuses
# older toolchains for them. tracing 0.1.44 (tracing-core, once_cell) declares 1.65: the
# library's own toolchain builds the tracing feature.
MSRV_LIB=$(sed -n 's/^rust-version = "\(.*\)"$/\1/p' Cargo.toml)
MSRV_CHECKS=(
    "$MSRV_LIB|none|--lib"
    "1.81|half|--lib --features half"
    "1.85|cli|--bin nccl-trampoline --features cli"
    "1.88|cudarc|--lib --features cudarc"
    "1.88|cudarc-nccl|--lib --features cudarc-nccl"
    "1.85|bench|--bench call_overhead --features bench"
    "$MSRV_LIB|tracing|--lib --features tracing"
)

install() {
    local need=()
    command -v qemu-aarch64 >/dev/null || need+=(qemu-user)
    command -v aarch64-linux-gnu-gcc >/dev/null || need+=(gcc-aarch64-linux-gnu)
    [ -e /usr/aarch64-linux-gnu/lib/libc.so.6 ] || need+=(libc6-dev-arm64-cross)
    command -v aarch64-linux-gnu-g++ >/dev/null || need+=(g++-aarch64-linux-gnu)
    command -v aarch64-linux-gnu-objdump >/dev/null || need+=(binutils-aarch64-linux-gnu)
    command -v qemu-riscv64 >/dev/null || need+=(qemu-user)
    command -v riscv64-linux-gnu-gcc >/dev/null || need+=(gcc-riscv64-linux-gnu)
    [ -e /usr/riscv64-linux-gnu/lib/libc.so.6 ] || need+=(libc6-dev-riscv64-cross)
    command -v riscv64-linux-gnu-objdump >/dev/null || need+=(binutils-riscv64-linux-gnu)
    command -v readelf >/dev/null || need+=(binutils)
    # The second ABI oracle (tests/conformance.rs with NCCL_TRAMPOLINE_TEST_CC=clang).
    command -v clang >/dev/null || need+=(clang)
    # libffi is the benchmark's comparison point (the `libffi` crate links the system one).
    { [ -e /usr/include/ffi.h ] || [ -e /usr/include/x86_64-linux-gnu/ffi.h ]; } || need+=(libffi-dev)
    command -v pkg-config >/dev/null || need+=(pkg-config)
    # pip fetches the NCCL wheels.
    python3 -m pip --version >/dev/null 2>&1 || need+=(python3-pip)
    # Real launchers: Open MPI and MPICH side by side (mpirun.openmpi, mpirun.mpich), and a
    # one-host Slurm with munge (scripts/slurm-single-host.sh).
    command -v mpirun.openmpi >/dev/null || need+=(openmpi-bin)
    command -v mpirun.mpich >/dev/null || need+=(mpich)
    command -v slurmctld >/dev/null || need+=(slurm-wlm)
    command -v munged >/dev/null || need+=(munge)
    if [ ${#need[@]} -gt 0 ]; then
        step "apt-get install ${need[*]}"
        as_root apt-get update -qq
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    fi
    local installed
    installed=$(rustup target list --installed)
    for t in "$AARCH64" "$RISCV64" "${CHECK_TARGETS[@]}"; do
        grep -qx "$t" <<<"$installed" || { step "rustup target add $t"; rustup target add "$t"; }
    done
    rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy
    rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt
    local entry toolchain
    for entry in "${MSRV_CHECKS[@]}"; do
        toolchain=${entry%%|*}
        rustup run "$toolchain" rustc --version >/dev/null 2>&1 || {
            step "rustup toolchain install $toolchain (MSRV)"
            rustup toolchain install "$toolchain" --profile minimal
        }
    done
    # The fuzz targets' runner (scripts/fuzz.sh), pinned.
    cargo fuzz --version 2>/dev/null | grep -q "^cargo-fuzz $CARGO_FUZZ\$" || {
        step "cargo install cargo-fuzz $CARGO_FUZZ"
        cargo install cargo-fuzz --version "$CARGO_FUZZ" --locked --quiet
    }
    if ! rustup +"$NIGHTLY" component list --installed 2>/dev/null | grep -q '^miri'; then
        step "rustup toolchain install $NIGHTLY (AddressSanitizer, Miri)"
        rustup toolchain install "$NIGHTLY" --profile minimal --component miri,rust-src ||
            echo "could not install $NIGHTLY: the sanitizer and Miri steps will say SKIP" >&2
    fi
}

[ "${SKIP_INSTALL:-0}" = 1 ] || install

export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
# NCCL's bootstrap (ncclGetUniqueId) listens on loopback only.
export NCCL_SOCKET_IFNAME=lo

if [ "${QUICK:-0}" = 1 ]; then
    # The inner loop's tier: what a change most often breaks, natively, in a few minutes (no
    # qemu, no second oracle, no real NCCL, sanitizers, fuzzing or MSRV: the full run has them).
    step "quick tier (QUICK=1): rustfmt, native unit, integration and doc tests with the command (the layering check among them), clippy"
    quick_start=$SECONDS
    cargo fmt --check
    cargo test --features cli --quiet
    cargo clippy --all-targets --quiet --features cli -- -D warnings
    step "quick tier passed in $((SECONDS - quick_start)) s (the full suite: scripts/test.sh without QUICK)"
    exit 0
fi

# The full run: with gcc, 10,000 random signatures (forward calls) and 10,000 random callback
# signatures per architecture, each callback called by C callers built at -O0 and at -O2. Clang,
# the second oracle, checks fewer, so that the suite stays within 40 minutes on two cores:
# natively 10,000 signatures and 5,000 callbacks (CLANG_CALLBACKS); under qemu 5,000 signatures
# (QEMU_CLANG_SIGNATURES) and 2,000 callbacks (QEMU_CLANG_CALLBACKS).
export NCCL_TRAMPOLINE_CALLBACK_COUNT=${NCCL_TRAMPOLINE_CALLBACK_COUNT:-10000}
CLANG_CALLBACKS=${CLANG_CALLBACKS:-5000}
QEMU_CLANG_SIGNATURES=${QEMU_CLANG_SIGNATURES:-5000}
QEMU_CLANG_CALLBACKS=${QEMU_CLANG_CALLBACKS:-2000}
step "real NCCL builds (scripts/fetch-nccl.sh)"
mapfile -t nccl_libs < <(scripts/fetch-nccl.sh)
[ ${#nccl_libs[@]} -eq 3 ] || { echo "scripts/fetch-nccl.sh did not produce three libraries" >&2; exit 1; }
NCCL_NEW_VERSION=${NCCL_NEW:-2.32.3}
printf '  %s\n' "${nccl_libs[@]}"
# The test binaries print the fuzz seed and the hardening findings.
TEST_ARGS=(-- --nocapture)

# One build for the native tests: the command (cli), the 16-bit float types (half) and the
# operator events (tracing, whose tests/tracing.rs needs it) in one feature set.
NATIVE_FEATURES=cli,half,tracing
step "native: build ($NATIVE_FEATURES)"
cargo build --all-targets --features "$NATIVE_FEATURES"
step "native: tests (unit, conformance, hardening, doc, the command against the stand-in, the tracing feature's events)"
cargo test --features "$NATIVE_FEATURES" "${TEST_ARGS[@]}"
step "native: ABI conformance and callbacks with clang as the oracle"
clang_start=$SECONDS
# The native build's features, so that no other build of the crate is made for these steps.
NCCL_TRAMPOLINE_TEST_CC=clang cargo test --features "$NATIVE_FEATURES" --test conformance "${TEST_ARGS[@]}"
# Callbacks: C callers compiled by clang.
NCCL_TRAMPOLINE_CALLBACK_COUNT=$CLANG_CALLBACKS NCCL_TRAMPOLINE_TEST_CC=clang \
    cargo test --features "$NATIVE_FEATURES" --test callbacks --test variadic_callbacks --test typed_callbacks "${TEST_ARGS[@]}"
echo "clang oracle, native: $((SECONDS - clang_start)) s"
step "native: the README's main job (selftest), then selftest and doctor on the real $NCCL_NEW_VERSION"
cargo run --quiet --release --features cli -- selftest
cargo run --quiet --release --features cli -- selftest --library "${nccl_libs[0]}"
NCCL_TRAMPOLINE_LIBRARY=${nccl_libs[0]} cargo run --quiet --release --features cli -- doctor
step "native: facade against the real libnccl.so.2 ($NCCL_NEW_VERSION and an old build), no GPU"
NCCL_TRAMPOLINE_REAL_NCCL=${nccl_libs[0]} NCCL_TRAMPOLINE_REAL_NCCL_VERSION=$NCCL_NEW_VERSION \
NCCL_TRAMPOLINE_REAL_NCCL_OLD=${nccl_libs[2]} NCCL_TRAMPOLINE_REAL_NCCL_FOREIGN=${nccl_libs[1]} \
    cargo test --features "$NATIVE_FEATURES" --test real_nccl -- --ignored --nocapture
step "native: real launchers (Open MPI, MPICH, Slurm): the real NCCL $NCCL_NEW_VERSION and the stand-ins"
launchers_start=$SECONDS
scripts/launchers.sh "${nccl_libs[0]}"
echo "real launchers: $((SECONDS - launchers_start)) s"
step "native: the README's snippets in new projects of their own (scripts/readme-snippets.sh)"
scripts/readme-snippets.sh "${nccl_libs[0]}"
step "native: examples"
for example in ldiv qsort variadic_logger qsort_callback; do
    cargo run --quiet --features "$NATIVE_FEATURES" --example "$example"
done
step "native: rustfmt, clippy and docs"
cargo fmt --check
cargo clippy --all-targets --quiet -- -D warnings
cargo clippy --all-targets --quiet --features half,cudarc,cli,cudarc-nccl,tracing -- -D warnings
# The GPU examples build (cudarc loads libcuda at run time; they run on the GPU machine) and,
# without a GPU, say so in one line.
cargo build --quiet --features cudarc-nccl --examples
cargo test --quiet --features cudarc-nccl --test examples_without_gpu
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --quiet --features half,cudarc,tracing

step "aarch64 under qemu-aarch64 -cpu max: tests"
cargo test --target "$AARCH64" "${TEST_ARGS[@]}"
step "aarch64 under qemu-aarch64 -cpu max: ABI conformance and callbacks with clang --target=aarch64-linux-gnu as the oracle"
clang_start=$SECONDS
NCCL_TRAMPOLINE_FUZZ_COUNT=$QEMU_CLANG_SIGNATURES NCCL_TRAMPOLINE_TEST_CC="clang --target=aarch64-linux-gnu" \
    cargo test --target "$AARCH64" --test conformance "${TEST_ARGS[@]}"
NCCL_TRAMPOLINE_CALLBACK_COUNT=$QEMU_CLANG_CALLBACKS NCCL_TRAMPOLINE_TEST_CC="clang --target=aarch64-linux-gnu" \
    cargo test --target "$AARCH64" --test callbacks --test variadic_callbacks --test typed_callbacks "${TEST_ARGS[@]}"
echo "clang oracle, aarch64: $((SECONDS - clang_start)) s"
step "aarch64 under qemu-aarch64 -cpu max: facade against the real aarch64 libnccl.so.2"
NCCL_TRAMPOLINE_REAL_NCCL=${nccl_libs[1]} NCCL_TRAMPOLINE_REAL_NCCL_VERSION=$NCCL_NEW_VERSION \
NCCL_TRAMPOLINE_REAL_NCCL_FOREIGN=${nccl_libs[0]} \
    cargo test --target "$AARCH64" --test real_nccl -- --ignored --nocapture
step "aarch64 under qemu-aarch64 -cpu max: selftest (built-in oracle, then the real aarch64 NCCL)"
cargo run --quiet --target "$AARCH64" --features cli -- selftest --no-gpu --library "${nccl_libs[1]}"
step "aarch64 under qemu-aarch64 -cpu max: examples"
cargo run --quiet --target "$AARCH64" --example ldiv
cargo run --quiet --target "$AARCH64" --example qsort
cargo run --quiet --target "$AARCH64" --example variadic_logger
cargo run --quiet --target "$AARCH64" --example qsort_callback

step "riscv64 under qemu-riscv64: tests (unit, conformance with 10,000 random signatures, callbacks, hardening, no-alloc)"
riscv64_start=$SECONDS
cargo test --target "$RISCV64" "${TEST_ARGS[@]}"
step "riscv64 under qemu-riscv64: selftest (built-in oracle; no NCCL exists for riscv64: that stage skips)"
cargo run --quiet --target "$RISCV64" --features cli -- selftest --no-gpu
step "riscv64 under qemu-riscv64: examples, clippy"
cargo run --quiet --target "$RISCV64" --example ldiv
cargo run --quiet --target "$RISCV64" --example qsort
cargo run --quiet --target "$RISCV64" --example variadic_logger
cargo run --quiet --target "$RISCV64" --example qsort_callback
cargo clippy --quiet --target "$RISCV64" --all-targets --features cli -- -D warnings
echo "riscv64 steps: $((SECONDS - riscv64_start)) s"
step "riscv64 under qemu-riscv64: ABI conformance and callbacks with clang --target=riscv64-linux-gnu as the oracle"
clang_start=$SECONDS
NCCL_TRAMPOLINE_FUZZ_COUNT=$QEMU_CLANG_SIGNATURES NCCL_TRAMPOLINE_TEST_CC="clang --target=riscv64-linux-gnu" \
    cargo test --target "$RISCV64" --test conformance "${TEST_ARGS[@]}"
NCCL_TRAMPOLINE_CALLBACK_COUNT=$QEMU_CLANG_CALLBACKS NCCL_TRAMPOLINE_TEST_CC="clang --target=riscv64-linux-gnu" \
    cargo test --target "$RISCV64" --test callbacks --test variadic_callbacks --test typed_callbacks "${TEST_ARGS[@]}"
echo "clang oracle, riscv64: $((SECONDS - clang_start)) s"

if rustup run "$NIGHTLY" rustdoc --version >/dev/null 2>&1; then
    step "public API ($NIGHTLY rustdoc JSON): docs/public-api.txt still lists it (scripts/public-api.sh)"
    NCCL_TRAMPOLINE_NIGHTLY=$NIGHTLY scripts/public-api.sh
else
    step "SKIP the public API listing: the $NIGHTLY toolchain could not be installed"
fi

if rustup +"$NIGHTLY" component list --installed 2>/dev/null | grep -q '^miri'; then
    step "AddressSanitizer ($NIGHTLY): the facade, host-API, fault-model and plugin tests, the C stand-ins and test plugins instrumented"
    asan=(env NCCL_TRAMPOLINE_TEST_CFLAGS="-fsanitize=address -fno-omit-frame-pointer"
        RUSTFLAGS="-Zsanitizer=address -Clink-arg=-Wl,--export-dynamic" CARGO_TARGET_DIR=target/asan
        ASAN_OPTIONS=detect_stack_use_after_return=1:detect_leaks=0)
    "${asan[@]}" cargo +"$NIGHTLY" test --quiet --target "$HOST" --test facade --test host_api --test faults --test plugins
    step "AddressSanitizer: the negative control must be caught"
    if "${asan[@]}" cargo +"$NIGHTLY" test --quiet --target "$HOST" --test faults -- --ignored --exact \
        asan_negative_control_a_late_store_into_freed_memory >target/asan-control.log 2>&1; then
        echo "the negative control passed: AddressSanitizer did not see a late store into freed memory" >&2
        exit 1
    fi
    grep -m1 "ERROR: AddressSanitizer: heap-use-after-free" target/asan-control.log
    step "Miri ($NIGHTLY): the pure modules (placement, the type model and its interned aggregates, c_struct!, deadlines, variadic-callback readers, the facade's types: configs, versions, errors; bounded calls, load-error texts)"
    # (plan::tests::plan_for_a_foreign_abi_cannot_be_called reads the assembly's code table
    # since plans compile to programs: Miri cannot run it.)
    miri_filters=(abi:: types:: wide:: callback::va:: c_struct:: time::tests nccl::types
        nccl::library::functions::tests::every_declaration_matches symbols:: nccl::comm::bounded
        plan::tests::limits loader:: nccl::library::discovery::tests::cuda_major
        nccl::library::discovery::tests::record_lines foreign::elf::tests::the_seeds
        foreign::ld_cache::tests::the_loaders foreign::ld_cache::tests::a_cache_ldconfig)
    # A filter that matches no test would pass in silence (a module moved): each must match one.
    listed=$(cargo test --quiet --lib -- --list 2>/dev/null)
    for f in "${miri_filters[@]}"; do
        grep -qF -- "$f" <<<"$listed" || { echo "the Miri filter $f matches no unit test" >&2; exit 1; }
    done
    cargo +"$NIGHTLY" miri test --quiet --lib -- "${miri_filters[@]}"
    step "fuzz ($NIGHTLY): every cargo-fuzz target for $FUZZ_SECONDS s from its committed corpus (scripts/fuzz.sh)"
    fuzz_start=$SECONDS
    FUZZ_TOOLCHAIN=$NIGHTLY scripts/fuzz.sh
    echo "fuzzing: $((SECONDS - fuzz_start)) s"
else
    step "SKIP AddressSanitizer, Miri and fuzzing: the $NIGHTLY toolchain could not be installed"
fi

for t in "${CHECK_TARGETS[@]}"; do
    step "cargo check --target $t (no trampoline: must build, calls return Unsupported)"
    cargo check --quiet --lib --target "$t"
done

step "benchmark builds"
cargo bench --features bench --no-run --quiet

step "MSRV: each part with exactly its oldest supported toolchain (MSRV_CHECKS)"
for entry in "${MSRV_CHECKS[@]}"; do
    IFS='|' read -r toolchain feature args <<<"$entry"
    # The README's "Use it in your project" table: | `feature` | ... | toolchain |, and
    # | *(none)* | ... | for the library.
    awk -F'|' -v f="$feature" -v v="$toolchain" '
        NF < 4 { next }
        { gsub(/[`*() ]/, "", $2); gsub(/ /, "", $(NF-1)) }
        $2 == f && $(NF-1) == v { found = 1 }
        END { exit !found }' README.md ||
        { echo "README.md's feature table does not give $toolchain for $feature" >&2; exit 1; }
    echo "  $feature: cargo +$toolchain check --locked $args"
    # shellcheck disable=SC2086 # the arguments are words
    CARGO_TARGET_DIR=target/msrv cargo +"$toolchain" check --locked --quiet $args
done

step "cargo package: what ships (sources, tests, examples, ADRs; no scripts, logs or target/)"
cargo package --list --allow-dirty --quiet >target/package-files.txt
if grep -E '^(target|scripts|\.ci|\.cargo|docs/gpu-results|docs/perf-results)/' target/package-files.txt; then
    echo "the files above must not ship: see include in Cargo.toml" >&2
    exit 1
fi
# The command's built-in oracle ships, and nothing it is built from lies under tests/ (ADR 16).
for f in oracle/runtime.c generated/selftest_oracle.c; do
    grep -qx "$f" target/package-files.txt || { echo "$f does not ship: see include in Cargo.toml" >&2; exit 1; }
done
if grep -n '"tests/' build.rs; then
    echo "build.rs builds from tests/: the shipped command must not depend on the tests" >&2
    exit 1
fi
# Builds the packaged sources as a user's `cargo install --features cli` would.
cargo package --allow-dirty --quiet --features cli
crate=$(ls target/package/nccl-trampoline-*.crate)
echo "  $(wc -l <target/package-files.txt) files, $(($(stat -c %s "$crate") / 1024)) KiB: $crate"

step "all suites passed"
