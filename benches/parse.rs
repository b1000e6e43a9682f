//! Trace parsing throughput, in MB/s of CSV text: the whole reader (CSV fields, checks, the
//! jobs, and the `Workload` with its sort by submit time) from bytes already in memory, so the
//! disk is not measured. The parsed trace is returned, so divan frees it outside the timing.
//!
//! `cargo bench --bench parse` measures:
//! - `philly`: philly.csv (3.4 MB, 82,247 jobs, unsorted, date-times and a queue per job);
//! - `itp`: the Microsoft ITP cluster04.csv (825 KB, 15,801 jobs, integer seconds);
//! - `openb`: Alibaba's openb_pod_list_default.csv (575 KB, 8,152 pods);
//! - `canonical`: a jobs.csv of 100,000 synthetic jobs with estimates and 8 queues, written by
//!   the canonical writer (every one of its 23 columns).
//!
//! And streamed (`traces::stream_jobs`, issue 36), each job made and dropped in turn:
//! - `itp_streamed`, `canonical_streamed`: the same bytes in memory, `Order::Sorted`;
//! - `philly_streamed_sort`: philly.csv from its path (the page cache after the first sample),
//!   `Order::Sort`, as the file is unsorted.
//!
//! And the built-in workload of `simulate --stream` (1,000,000 jobs for 100,000 GPUs at load
//! 0.9), whose jobs are drawn, not parsed:
//! - `synth_survey`: the check pass before the run (`SynthJobs::survey`: draws, kinds, span);
//! - `synth_drawn`: every job drawn whole, as the run's reading thread draws them.
//!
//! The shared traces need ../shared/traces beside the checkout; without it each prints SKIPPED.

use divan::counter::BytesCount;
use std::path::PathBuf;
use std::sync::OnceLock;
use traces::Format;

fn main() {
    divan::main();
}

/// The bytes of a shared trace file, or `None` (with SKIPPED printed) when it is absent.
fn shared(relative: &str) -> Option<Vec<u8>> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/traces").join(relative);
    match std::fs::read(&path) {
        Ok(bytes) => Some(bytes),
        Err(_) => {
            eprintln!("SKIPPED: {} not found", path.display());
            None
        }
    }
}

/// Parses `bytes` as `format` once per iteration; the counter makes divan print MB/s.
fn bench_parse(bencher: divan::Bencher, bytes: &[u8], format: Format) {
    bencher
        .counter(BytesCount::new(bytes.len()))
        .bench(|| traces::read_trace(divan::black_box(bytes), "bench.csv", format).expect("the trace parses"));
}

#[divan::bench(sample_count = 20, sample_size = 1)]
fn philly(bencher: divan::Bencher) {
    static BYTES: OnceLock<Option<Vec<u8>>> = OnceLock::new();
    if let Some(bytes) = BYTES.get_or_init(|| shared("philly-pollux/philly.csv")) {
        bench_parse(bencher, bytes, Format::Philly);
    }
}

#[divan::bench(sample_count = 50, sample_size = 1)]
fn itp(bencher: divan::Bencher) {
    static BYTES: OnceLock<Option<Vec<u8>>> = OnceLock::new();
    if let Some(bytes) = BYTES.get_or_init(|| shared("microsoft-itp-elasticflow/cluster04.csv")) {
        bench_parse(bencher, bytes, Format::Itp);
    }
}

#[divan::bench(sample_count = 50, sample_size = 1)]
fn openb(bencher: divan::Bencher) {
    static BYTES: OnceLock<Option<Vec<u8>>> = OnceLock::new();
    if let Some(bytes) = BYTES.get_or_init(|| shared("alibaba-gpu-v2023-openb/openb_pod_list_default.csv")) {
        bench_parse(bencher, bytes, Format::Openb);
    }
}

/// 100,000 synthetic jobs (with estimates, in 8 queues) as the canonical writer writes them.
fn canonical_bytes() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let mut config = traces::SynthConfig::for_load(100_000, 1024, 0.9, 0);
        config.estimate_sigma = Some(0.5);
        let mut jobs = config.generate().expect("synthetic workload").into_jobs();
        for (index, job) in jobs.iter_mut().enumerate() {
            job.queue = Some(format!("team-{}", index % 8).into());
        }
        let workload = sim::Workload::new(jobs).expect("valid workload");
        let mut out = Vec::new();
        traces::write_trace_jobs_csv(&workload, &mut out).expect("the writer takes it");
        out
    })
}

#[divan::bench(sample_count = 20, sample_size = 1)]
fn canonical(bencher: divan::Bencher) {
    bench_parse(bencher, canonical_bytes(), Format::Canonical);
}

/// Streams `bytes` as `format` in submit order once per iteration, dropping each job.
fn bench_stream(bencher: divan::Bencher, bytes: &'static [u8], format: Format) {
    bencher.counter(BytesCount::new(bytes.len())).bench(|| {
        let stream = traces::stream_sorted(divan::black_box(bytes), "bench.csv", format).expect("the trace streams");
        stream.inspect(|job| assert!(job.is_ok(), "the trace parses: {job:?}")).count()
    });
}

#[divan::bench(sample_count = 50, sample_size = 1)]
fn itp_streamed(bencher: divan::Bencher) {
    static BYTES: OnceLock<Option<Vec<u8>>> = OnceLock::new();
    if let Some(bytes) = BYTES.get_or_init(|| shared("microsoft-itp-elasticflow/cluster04.csv")) {
        bench_stream(bencher, bytes, Format::Itp);
    }
}

#[divan::bench(sample_count = 20, sample_size = 1)]
fn canonical_streamed(bencher: divan::Bencher) {
    bench_stream(bencher, canonical_bytes(), Format::Canonical);
}

#[divan::bench(sample_count = 20, sample_size = 1)]
fn philly_streamed_sort(bencher: divan::Bencher) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/traces/philly-pollux/philly.csv");
    let Ok(size) = std::fs::metadata(&path).map(|m| m.len()) else {
        eprintln!("SKIPPED: {} not found", path.display());
        return;
    };
    bencher.counter(BytesCount::new(size as usize)).bench(|| {
        let stream = traces::stream_jobs(&path, Format::Philly, traces::Order::Sort).expect("the trace streams");
        stream.inspect(|job| assert!(job.is_ok(), "the trace parses: {job:?}")).count()
    });
}

/// The built-in workload of `simulate --jobs 1000000 --cluster 12500x8:V100 --stream`.
fn synth_jobs() -> traces::synth::SynthJobs {
    traces::SynthConfig::for_load(SYNTH_JOBS, 100_000, 0.9, 0).jobs().expect("valid settings")
}

const SYNTH_JOBS: usize = 1_000_000;

#[divan::bench(sample_count = 10, sample_size = 1)]
fn synth_survey(bencher: divan::Bencher) {
    bencher.counter(divan::counter::ItemsCount::new(SYNTH_JOBS)).bench(|| synth_jobs().survey().expect("drawn"));
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn synth_drawn(bencher: divan::Bencher) {
    bencher
        .counter(divan::counter::ItemsCount::new(SYNTH_JOBS))
        .bench(|| synth_jobs().inspect(|job| assert!(job.is_ok(), "drawn: {job:?}")).count());
}
