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
/// time (`btime` of `/proc/stat`) plus the time since boot (`/proc/uptime`). Every process of
/// the machine reads the same value, and none can move it for itself (`faketime`, a clock set
/// wrong in one process's environment): a recoverer whose clock runs ahead does not take a live
/// lease, nor does a sender whose clock runs behind write one that looks run out. Only setting
/// the machine's clock moves it, for every process at once. Where `/proc` cannot be read (not
/// Linux), or its `uptime` is a container's own (LXCFS mounts one over it, beside the host's
/// boot time: their sum would be the host's boot plus the container's age), the process's wall
/// clock.
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
/// Measured, it jitters by the 10 ms of `/proc/uptime`'s resolution, which would let the lease
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

/// Whether `/proc/uptime` is a file mounted over the kernel's (LXCFS gives a container its own
/// uptime, and leaves `/proc/stat`'s boot time the host's).
#[cfg(feature = "sqlite")]
fn uptime_is_mounted_over() -> bool {
    static OVER: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OVER.get_or_init(|| {
        std::fs::read_to_string("/proc/self/mountinfo").is_ok_and(|m| {
            m.lines()
                .any(|line| line.split(' ').nth(4) == Some("/proc/uptime"))
        })
    })
}

#[cfg(feature = "sqlite")]
pub(super) fn kernel_clock_ms() -> Option<i64> {
    if uptime_is_mounted_over() {
        return None;
    }
    let mut buf = [0u8; 64];
    let n = read_uptime(&mut buf)?;
    let uptime = std::str::from_utf8(&buf[..n]).ok()?;
    let (whole, hundredths) = uptime.split_whitespace().next()?.split_once('.')?;
    let up_ms = whole.parse::<i64>().ok()? * 1000 + hundredths.parse::<i64>().ok()? * 10;
    Some(boot_time_s()? * 1000 + up_ms)
}

/// `/proc/uptime`, read into `buf` from a descriptor kept open: one `pread` at offset 0, which
/// the kernel answers with the time of that read, where opening, reading and closing the file
/// took five system calls for every lease statement. Opened again if a read fails.
#[cfg(all(unix, feature = "sqlite"))]
fn read_uptime(buf: &mut [u8]) -> Option<usize> {
    use std::os::unix::fs::FileExt;
    use std::sync::Mutex;
    static FILE: Mutex<Option<std::fs::File>> = Mutex::new(None);
    let mut file = FILE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(f) = file.as_ref()
        && let Ok(n) = f.read_at(buf, 0)
        && n > 0
    {
        return Some(n);
    }
    let f = std::fs::File::open("/proc/uptime").ok()?;
    let n = f.read_at(buf, 0).ok()?;
    *file = Some(f);
    Some(n)
}

/// Not unix: no `/proc/uptime`.
#[cfg(all(not(unix), feature = "sqlite"))]
fn read_uptime(_buf: &mut [u8]) -> Option<usize> {
    None
}

/// The kernel's boot time in epoch seconds, read again at most once a second (`/proc/stat` is
/// long on a machine of many cores): it changes only when the machine's clock is set.
#[cfg(feature = "sqlite")]
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
    fn the_lease_clock_reads_the_time_since_boot_afresh_each_time() {
        let first = kernel_clock_ms().expect("Linux has /proc/uptime");
        // Boot time plus time since boot is now, to within the boot time's whole second.
        assert!((first - wall_clock_ms()).abs() < 5_000, "{first}");
        std::thread::sleep(std::time::Duration::from_millis(50));
        let later = kernel_clock_ms().expect("again");
        // The kept descriptor reads the file anew: 50 ms on, in hundredths of a second.
        assert!(
            later - first >= 40 && later - first < 5_000,
            "{first} then {later}"
        );
    }
}
