//! The clocks: the database's, for creation and update times; the one leases are judged by.

use super::*;

/// SQLite's clock in epoch milliseconds, as SQL: the wall clock of the process running the
/// statement (creation and update times, the deadline, prune).
#[cfg(feature = "sqlite")]
pub(super) const SQLITE_NOW: &str = "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)";

/// PostgreSQL's clock in epoch milliseconds, as SQL.
#[cfg(feature = "postgres")]
pub(super) const POSTGRES_NOW: &str = "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT";

/// The clock a SQLite journal's leases are judged by, in epoch milliseconds: the kernel's boot
/// time (`btime` of `/proc/stat`) plus the time since boot (`CLOCK_BOOTTIME`, the clock
/// `/proc/uptime` prints). Every process of the machine reads the same value, and none can move
/// it for itself (`faketime`, a clock set wrong in one process's environment): a recoverer whose
/// clock runs ahead does not take a live lease, nor does a sender whose clock runs behind write
/// one that looks run out. Only setting the machine's clock moves it, for every process at once.
/// A container's own uptime (LXCFS mounts one over `/proc/uptime`) does not change it: the clock
/// is read from the kernel, not from that file. Where `/proc` cannot be read (not Linux), the
/// process's wall clock.
#[cfg(feature = "sqlite")]
pub(crate) fn lease_clock_ms() -> i64 {
    kernel_clock_ms().unwrap_or_else(wall_clock_ms)
}

/// This process's wall clock (the one SQLite's `'now'` reads), in epoch milliseconds.
#[cfg(feature = "sqlite")]
fn wall_clock_ms() -> i64 {
    let now = time::OffsetDateTime::now_utc();
    (now.unix_timestamp_nanos() / 1_000_000) as i64
}

/// How far the lease clock is ahead of this process's wall clock, in milliseconds: bound to a
/// statement and added to SQLite's `'now'`, so that the lease clock is read when the statement
/// runs, after it has waited for the database's lock (a value read before the wait made a
/// lease that was already over when it was written).
///
/// Measured, it jitters by a millisecond (the two clocks are read one after the other, and the
/// wall clock is slewed by NTP where the time since boot is not), which would let the lease
/// clock step back between two statements; so the first measurement is kept, and replaced only
/// when one differs from it by more than a second (the process's clock was set, or `faketime`
/// moved it).
#[cfg(feature = "sqlite")]
pub(crate) fn lease_clock_offset_ms() -> i64 {
    use std::sync::Mutex;
    static KEPT: Mutex<Option<i64>> = Mutex::new(None);
    let measured = lease_clock_ms() - wall_clock_ms();
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    match *kept {
        Some(offset) if (measured - offset).abs() <= 1000 => offset,
        _ => {
            *kept = Some(measured);
            measured
        }
    }
}

/// The lease clock on SQLite, as SQL: its `'now'` plus the parameter `$k`, bound to
/// [`lease_clock_offset_ms`] (see [`Db::lease_now`]).
#[cfg(feature = "sqlite")]
pub(crate) fn sqlite_lease_now(k: usize) -> String {
    format!("({SQLITE_NOW} + ${k})")
}

/// The kernel's boot time plus its time since boot, in epoch milliseconds: a read of the vDSO's
/// clock, no system call (with the boot time read again at most once a second).
#[cfg(all(feature = "sqlite", target_os = "linux"))]
pub(super) fn kernel_clock_ms() -> Option<i64> {
    let up = rustix::time::clock_gettime(rustix::time::ClockId::Boottime);
    // `tv_nsec` is an `i64` on 64-bit Linux and a `c_long` elsewhere.
    #[allow(clippy::useless_conversion)]
    let up_ms = up.tv_sec * 1000 + i64::from(up.tv_nsec) / 1_000_000;
    Some(boot_time_s()? * 1000 + up_ms)
}

/// Not Linux: no kernel clock every process shares here; the wall clock instead.
#[cfg(all(feature = "sqlite", not(target_os = "linux")))]
pub(super) fn kernel_clock_ms() -> Option<i64> {
    None
}

/// The kernel's boot time in epoch seconds, read again at most once a second (`/proc/stat` is
/// long on a machine of many cores): it changes only when the machine's clock is set.
#[cfg(all(feature = "sqlite", target_os = "linux"))]
fn boot_time_s() -> Option<i64> {
    use std::sync::Mutex;
    use std::time::{Duration, Instant};
    static LAST: Mutex<Option<(Instant, i64)>> = Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((at, btime)) = *last
        && at.elapsed() < Duration::from_secs(1)
    {
        return Some(btime);
    }
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let btime = stat
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse::<i64>()
        .ok()?;
    *last = Some((Instant::now(), btime));
    Some(btime)
}

impl Db {
    /// The database's clock in epoch milliseconds, as SQL: every lease is compared with it,
    /// never with the wall clock of the process that wrote it (hosts disagree; the database is
    /// one clock).
    pub(super) fn now_sql(&self) -> &'static str {
        match self {
            #[cfg(feature = "sqlite")]
            Db::Sqlite(..) => SQLITE_NOW,
            #[cfg(feature = "postgres")]
            Db::Postgres(_) => POSTGRES_NOW,
        }
    }

    /// The clock leases are judged by, as SQL, in a statement whose own parameters are
    /// `$1`..`$(k-1)`: PostgreSQL's clock; on SQLite its `'now'` plus the parameter `$k`, bound
    /// to [`lease_clock_offset_ms`] (SQLite's own clock is the process's, which another
    /// process's may disagree with; the offset makes it the kernel's, read when the statement
    /// runs). Bind [`lease_clock`](Self::lease_clock) last.
    pub(crate) fn lease_now(&self, k: usize) -> String {
        #[cfg(not(feature = "sqlite"))]
        let _ = k;
        match self {
            #[cfg(feature = "sqlite")]
            Db::Sqlite(..) => sqlite_lease_now(k),
            #[cfg(feature = "postgres")]
            Db::Postgres(_) => POSTGRES_NOW.to_owned(),
        }
    }

    /// The value of [`lease_now`](Self::lease_now)'s parameter, to bind last: SQLite only (the
    /// lease clock's offset from the process's wall clock).
    pub(crate) fn lease_clock(&self) -> Option<i64> {
        match self {
            #[cfg(feature = "sqlite")]
            Db::Sqlite(..) => Some(lease_clock_offset_ms()),
            #[cfg(feature = "postgres")]
            Db::Postgres(_) => None,
        }
    }

    /// The database's clock, read.
    pub(crate) async fn now(&self) -> Result<i64, JournalError> {
        let sql = format!("SELECT {} AS now", self.now_sql());
        on_db!(self, pool => {
            let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                .fetch_one(pool)
                .await
                .map_err(JournalError::read)?;
            row.try_get::<i64, _>("now").map_err(JournalError::read)
        })
    }
}

#[cfg(all(test, feature = "sqlite", target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn the_lease_clock_is_the_kernels_and_reads_the_time_of_day() {
        let kernel = kernel_clock_ms().expect("Linux has a kernel clock");
        // Boot time plus time since boot is now, to within the boot time's whole second and
        // whatever NTP has slewed the wall clock since boot.
        assert!((kernel - wall_clock_ms()).abs() < 5_000, "{kernel}");
        // It never steps back between reads (the boot time is kept for a second at a time).
        let mut last = kernel;
        for _ in 0..1_000 {
            let now = lease_clock_ms();
            assert!(now >= last, "{now} < {last}");
            last = now;
        }
    }

    #[test]
    fn the_lease_clock_reads_what_proc_uptime_prints() {
        let up_ms = |text: String| {
            let (whole, hundredths) = text.split_whitespace().next()?.split_once('.')?;
            Some(whole.parse::<i64>().ok()? * 1000 + hundredths.parse::<i64>().ok()? * 10)
        };
        let before =
            kernel_clock_ms().expect("kernel clock") - boot_time_s().expect("btime") * 1000;
        let printed =
            up_ms(std::fs::read_to_string("/proc/uptime").expect("uptime")).expect("uptime");
        let after = kernel_clock_ms().expect("kernel clock") - boot_time_s().expect("btime") * 1000;
        // The file prints the same clock in hundredths of a second.
        assert!(
            printed >= before - 10 && printed <= after,
            "{before} {printed} {after}"
        );
    }
}
