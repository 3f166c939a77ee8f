//! The floor of the watchdog's cost per operation: one `cuEventRecord` on a stream, called
//! through the call core as the watchdog calls it (docs/perf.md). Needs a GPU: without one it
//! says so and exits 0. Run: `cargo bench --bench event_record` (or the binary staged by
//! scripts/gpu-test.sh, on the GPU machine).

use std::time::{Duration, Instant};

use nccl_trampoline::cuda::Driver;

const EVENTS: usize = 512;
const ROUNDS: usize = 7;
const PER_ROUND: usize = 100 * EVENTS;

fn main() {
    let driver = match Driver::load().and_then(|d| d.device_count().map(|n| (d, n))) {
        Ok((d, n)) if n > 0 => d,
        _ => {
            println!("event_record: skip (no CUDA driver or no GPU)");
            return;
        }
    };
    driver.activate(0).expect("GPU 0");
    let stream = driver.stream().expect("a stream");
    let events: Vec<_> = (0..EVENTS).map(|_| driver.event().expect("an event")).collect();
    let mut per_record = Vec::new();
    for round in 0..=ROUNDS {
        let mut spent = Duration::ZERO;
        for batch in 0..PER_ROUND / EVENTS {
            let started = Instant::now();
            for e in &events {
                // SAFETY: a live event and stream of the current context.
                unsafe { e.record(stream.raw()) }.expect("cuEventRecord");
            }
            spent += started.elapsed();
            // Keep the stream's queue short (not timed).
            if batch % 8 == 7 {
                stream.synchronize().expect("cuStreamSynchronize");
            }
        }
        if round > 0 {
            per_record.push(spent.as_nanos() as f64 / PER_ROUND as f64);
        }
    }
    per_record.sort_by(f64::total_cmp);
    println!(
        "event_record: cuEventRecord through the call core: median {:.0} ns per record (min {:.0}, max {:.0}; {ROUNDS} rounds of {PER_ROUND})",
        per_record[ROUNDS / 2],
        per_record[0],
        per_record[ROUNDS - 1]
    );
}
