//! The benchmark harness every service bench uses: the SDK and a hand-written baseline measured
//! in **interleaved rounds** in one process (A B, B A, A B, ...), so that whatever else the shared
//! machine does lands on both alike. Each round times a batch of calls of each side; the figure is
//! the **median of the per-round ratios**, printed with its interquartile spread and the goal.
//!
//! Allocations are counted with a counting global allocator, which the bench binary installs:
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOC: &stats_alloc::StatsAlloc<std::alloc::System> = &stats_alloc::INSTRUMENTED_SYSTEM;
//! ```
//!
//! A bench without it reports zero allocations. Run a bench with `cargo bench -p CRATE`; set
//! `WHISH_BENCH_ROUNDS` for more or fewer rounds (default 101), and `WHISH_BENCH_FILTER` to a part
//! of a figure's label to measure only that figure.

use std::future::Future;
use std::time::{Duration, Instant};

use stats_alloc::{INSTRUMENTED_SYSTEM, Region};

pub use crate::budget::Goal;

/// How a pair is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compare {
    /// Time per operation: ratio = SDK / baseline (lower is better).
    Latency,
    /// Operations per second: ratio = baseline time / SDK time (higher is better).
    Throughput,
}

/// One measured pair.
#[derive(Debug, Clone)]
pub struct Figure {
    /// What is measured.
    pub label: String,
    /// How the ratio reads.
    pub compare: Compare,
    /// The goal.
    pub goal: Goal,
    /// Operations in one batch (`ops_per_call` x calls).
    pub ops_per_batch: u64,
    /// Median batch time of the SDK and of the baseline.
    pub sdk: Duration,
    /// See `sdk`.
    pub baseline: Duration,
    /// The per-round ratios, sorted.
    pub ratios: Vec<f64>,
    /// Allocations per operation (whole process), SDK and baseline.
    pub allocs: (f64, f64),
}

impl Figure {
    /// The median of the per-round ratios.
    pub fn ratio(&self) -> f64 {
        quantile(&self.ratios, 0.5)
    }

    /// The interquartile range of the per-round ratios.
    pub fn spread(&self) -> (f64, f64) {
        (quantile(&self.ratios, 0.25), quantile(&self.ratios, 0.75))
    }

    /// Whether the goal is met (`None`: no goal).
    pub fn met(&self) -> Option<bool> {
        self.goal.met(self.ratio())
    }

    fn per_op(&self, d: Duration) -> String {
        let ns = d.as_nanos() as f64 / self.ops_per_batch as f64;
        match self.compare {
            Compare::Throughput => format!("{:.0} op/s", 1e9 / ns),
            Compare::Latency if ns >= 1e6 => format!("{:.2} ms", ns / 1e6),
            Compare::Latency if ns >= 1e4 => format!("{:.1} us", ns / 1e3),
            Compare::Latency => format!("{ns:.0} ns"),
        }
    }
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// The rounds of every pair (`WHISH_BENCH_ROUNDS`, default 101: an odd number has a true median).
pub fn rounds() -> usize {
    std::env::var("WHISH_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n >= 3)
        .unwrap_or(101)
}

/// Whether `WHISH_BENCH_FILTER` (a part of a figure's label) selects this figure; all are
/// selected when it is unset.
fn selected(label: &str) -> bool {
    std::env::var("WHISH_BENCH_FILTER").map_or(true, |f| label.contains(&f))
}

/// The figures of one bench run, printed as a table at the end.
#[derive(Debug, Default)]
pub struct Report {
    title: String,
    figures: Vec<Figure>,
    notes: Vec<String>,
}

impl Report {
    /// A report with a title.
    pub fn new(title: impl Into<String>) -> Report {
        Report {
            title: title.into(),
            ..Report::default()
        }
    }

    /// Measure a pair of synchronous operations: each call of a closure is one batch of `n`
    /// operations (it runs them and returns nothing; the harness times it).
    pub fn pair(
        &mut self,
        label: &str,
        compare: Compare,
        goal: Goal,
        sdk: impl FnMut(u64),
        baseline: impl FnMut(u64),
    ) -> Option<&Figure> {
        if !selected(label) {
            return None;
        }
        let figure = measure(label, compare, goal, 1, sdk, baseline);
        Some(self.push(figure))
    }

    /// Measure a pair of asynchronous operations on `rt`; one call of `sdk` or `baseline` is
    /// `ops_per_call` operations (64 for a batch of concurrent calls).
    // The call sites read as a table row (label, comparison, goal, width, the two sides).
    #[allow(clippy::too_many_arguments)]
    pub fn pair_async<S, SF, B, BF>(
        &mut self,
        rt: &tokio::runtime::Runtime,
        label: &str,
        compare: Compare,
        goal: Goal,
        ops_per_call: u64,
        sdk: S,
        baseline: B,
    ) -> Option<&Figure>
    where
        S: FnMut() -> SF,
        SF: Future<Output = ()>,
        B: FnMut() -> BF,
        BF: Future<Output = ()>,
    {
        if !selected(label) {
            return None;
        }
        let figure = measure(
            label,
            compare,
            goal,
            ops_per_call,
            in_turn(rt, sdk),
            in_turn(rt, baseline),
        );
        Some(self.push(figure))
    }

    /// Measure the **CPU time the calling thread spends** on one call of each side, one call at
    /// a time on a single-threaded runtime of its own (its connections, parsing and system
    /// calls included), while the server runs elsewhere: the client's own work, without the
    /// round trip's waiting and the server's share, which make wall-clock figures noisy. Build
    /// the clients for it apart from those of the other figures (a connection belongs to the
    /// runtime that opened it). The time is the scheduler's account of the thread
    /// (`/proc/thread-self/schedstat`, in nanoseconds); where it cannot be read, wall time.
    pub fn pair_cpu<S, SF, B, BF>(
        &mut self,
        label: &str,
        goal: Goal,
        sdk: S,
        baseline: B,
    ) -> Option<&Figure>
    where
        S: FnMut() -> SF,
        SF: Future<Output = ()>,
        B: FnMut() -> BF,
        BF: Future<Output = ()>,
    {
        if !selected(label) {
            return None;
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let origin = Instant::now();
        let clock = move || thread_cpu().unwrap_or_else(|| origin.elapsed());
        let figure = measure_by(
            &clock,
            label,
            Compare::Latency,
            goal,
            1,
            in_turn(&rt, sdk),
            in_turn(&rt, baseline),
        );
        Some(self.push(figure))
    }

    fn push(&mut self, figure: Figure) -> &Figure {
        eprintln!(
            "  {:<48} median ratio {:.3} (IQR {:.3}-{:.3}) over {} rounds",
            figure.label,
            figure.ratio(),
            figure.spread().0,
            figure.spread().1,
            figure.ratios.len()
        );
        self.figures.push(figure);
        self.figures.last().expect("just pushed")
    }

    /// A free-form line printed under the table.
    pub fn note(&mut self, line: impl Into<String>) {
        self.notes.push(line.into());
    }

    /// Print the table: every figure next to its goal; and record each figure for the budget
    /// check ([`crate::budget::record`]).
    pub fn print(&self) {
        for f in &self.figures {
            crate::budget::record(&self.title, &f.label, f.ratio(), f.goal);
        }
        println!(
            "\n{} (interleaved rounds, median of per-round ratios)",
            self.title
        );
        println!(
            "{:<48} {:>12} {:>12} {:>7} {:>13} {:>8} {:>4} {:>15}",
            "figure", "sdk", "baseline", "ratio", "IQR", "goal", "met", "allocs/op s|b"
        );
        for f in &self.figures {
            let (lo, hi) = f.spread();
            let met = match f.met() {
                Some(true) => "yes",
                Some(false) => "NO",
                None => "-",
            };
            println!(
                "{:<48} {:>12} {:>12} {:>7.3} {:>6.3}-{:<6.3} {:>8} {:>4} {:>7.1}|{:<7.1}",
                f.label,
                f.per_op(f.sdk),
                f.per_op(f.baseline),
                f.ratio(),
                lo,
                hi,
                f.goal.text(),
                met,
                f.allocs.0,
                f.allocs.1,
            );
        }
        for n in &self.notes {
            println!("{n}");
        }
    }

    /// The figures measured so far.
    pub fn figures(&self) -> &[Figure] {
        &self.figures
    }
}

/// Calibrate a batch to about `target`, warm both sides, then run the interleaved rounds.
fn measure(
    label: &str,
    compare: Compare,
    goal: Goal,
    ops_per_call: u64,
    sdk: impl FnMut(u64),
    baseline: impl FnMut(u64),
) -> Figure {
    let origin = Instant::now();
    measure_by(
        &|| origin.elapsed(),
        label,
        compare,
        goal,
        ops_per_call,
        sdk,
        baseline,
    )
}

/// [`measure`] on `clock` (wall time, or this thread's CPU time).
fn measure_by(
    clock: &dyn Fn() -> Duration,
    label: &str,
    compare: Compare,
    goal: Goal,
    ops_per_call: u64,
    mut sdk: impl FnMut(u64),
    mut baseline: impl FnMut(u64),
) -> Figure {
    let target = Duration::from_millis(25);
    let time = |f: &mut dyn FnMut(u64), n: u64| {
        let started = clock();
        f(n);
        clock().saturating_sub(started)
    };
    // Calibrate on the baseline: the smallest power of two whose batch takes `target`.
    let mut n = 1u64;
    while n < 1 << 20 && time(&mut baseline, n) < target {
        n *= 2;
    }
    // Warm both alike (caches, pools, allocator arenas), untimed.
    for _ in 0..3 {
        sdk(n);
        baseline(n);
    }
    let allocs = (
        allocations(&mut sdk, n) / (n * ops_per_call) as f64,
        allocations(&mut baseline, n) / (n * ops_per_call) as f64,
    );
    let rounds = rounds();
    let (mut s, mut b, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        // A B, then B A: neither side always runs first.
        let (ts, tb) = if round % 2 == 0 {
            let ts = time(&mut sdk, n);
            (ts, time(&mut baseline, n))
        } else {
            let tb = time(&mut baseline, n);
            (time(&mut sdk, n), tb)
        };
        let r = ts.as_secs_f64() / tb.as_secs_f64();
        ratios.push(match compare {
            Compare::Latency => r,
            Compare::Throughput => 1.0 / r,
        });
        s.push(ts);
        b.push(tb);
    }
    ratios.sort_by(f64::total_cmp);
    s.sort();
    b.sort();
    Figure {
        label: label.to_owned(),
        compare,
        goal,
        ops_per_batch: n * ops_per_call,
        sdk: s[s.len() / 2],
        baseline: b[b.len() / 2],
        ratios,
        allocs,
    }
}

/// Allocations (whole process) during one batch of `n`.
fn allocations(f: &mut dyn FnMut(u64), n: u64) -> f64 {
    let region = Region::new(&INSTRUMENTED_SYSTEM);
    f(n);
    region.change().allocations as f64
}

/// Start `n` tasks, each running the future `task()` makes, now; the returned future waits for
/// all of them. The "n concurrent calls" batch of every bench.
pub fn concurrently<F, Fut>(n: usize, mut task: F) -> impl Future<Output = ()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..n {
        set.spawn(task());
    }
    async move {
        set.join_all().await;
    }
}

/// The baselines' HTTP client: plain reqwest as a careful hand-written client builds it (no
/// redirects, a connect timeout), with the SDK's TLS stack so that it builds without a
/// process-wide rustls provider (the calls are plain HTTP to loopback).
pub fn baseline_client() -> reqwest::Client {
    whish_core::tls::client_builder()
        .expect("tls")
        .connect_timeout(Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

/// A batch of `n` calls of `call`, one after another on `rt`.
fn in_turn<'a, C, F>(rt: &'a tokio::runtime::Runtime, mut call: C) -> impl FnMut(u64) + 'a
where
    C: FnMut() -> F + 'a,
    F: Future<Output = ()>,
{
    move |n| {
        rt.block_on(async {
            for _ in 0..n {
                call().await;
            }
        })
    }
}

/// The CPU time the calling thread has run, as the scheduler accounts it (nanoseconds, the
/// first field of `/proc/thread-self/schedstat`); `None` where that file does not exist.
pub fn thread_cpu() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = text.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

/// The CPU time this whole process has run, every thread's (those that have ended too), as
/// the scheduler accounts it (`CLOCK_PROCESS_CPUTIME_ID`, to the nanosecond, user and system
/// time together); `None` where there is no such clock.
pub fn process_cpu() -> Option<Duration> {
    #[cfg(unix)]
    {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
        Some(Duration::new(
            u64::try_from(t.tv_sec).ok()?,
            u32::try_from(t.tv_nsec).ok()?,
        ))
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// [`serve`] on a thread and a single-threaded runtime of its own, for figures that measure
/// the client's thread alone ([`Report::pair_cpu`]); returns its base URL.
pub fn serve_elsewhere(reply: fn(&str) -> &'static str) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("server runtime");
        rt.block_on(async move {
            tx.send(serve(reply).await).expect("base");
            std::future::pending::<()>().await;
        });
    });
    rx.recv().expect("server started")
}

/// A loopback HTTP server answering every request with the body `reply(path)` chooses (JSON),
/// in the caller's runtime; returns its base URL (`http://127.0.0.1:PORT`).
pub async fn serve(reply: fn(&str) -> &'static str) -> String {
    let app = axum::Router::new().fallback(move |uri: axum::http::Uri| async move {
        (
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            reply(uri.path()),
        )
    });
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = tcp.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(tcp, app).await.expect("serve") });
    format!("http://{addr}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_of_sorted_ratios() {
        let r = [0.9, 1.0, 1.1, 1.2, 1.3];
        assert_eq!(quantile(&r, 0.5), 1.1);
        assert!((quantile(&r, 0.25) - 1.0).abs() < 1e-12);
        assert!((quantile(&[1.0, 2.0], 0.5) - 1.5).abs() < 1e-12);
        assert!(quantile(&[], 0.5).is_nan());
    }

    #[test]
    fn goals_read_both_ways() {
        assert_eq!(Goal::AtMost(1.02).met(1.01), Some(true));
        assert_eq!(Goal::AtMost(1.02).met(1.03), Some(false));
        assert_eq!(Goal::AtLeast(0.98).met(0.99), Some(true));
        assert_eq!(Goal::AtLeast(0.98).met(0.97), Some(false));
        assert_eq!(Goal::None.met(5.0), None);
    }

    /// The process's CPU time counts a thread's after it ended.
    #[test]
    fn process_cpu_counts_a_thread_that_ended() {
        let Some(before) = super::process_cpu() else {
            return; // not Linux: nothing to read
        };
        let spun = std::thread::spawn(|| {
            // Spin until this thread has run 300 ms, however busy the machine is.
            let start = thread_cpu().expect("this thread's CPU time");
            let mut x = 0u64;
            while thread_cpu().expect("again") - start < Duration::from_millis(300) {
                x = std::hint::black_box(x.wrapping_add(1));
            }
            thread_cpu().expect("again") - start
        })
        .join()
        .expect("spinner");
        let counted = super::process_cpu().expect("read again") - before;
        assert!(
            counted + Duration::from_millis(20) >= spun,
            "the process counts the ended thread's {spun:?} (ticks of 10 ms): {counted:?}"
        );
    }
}
