//! Who holds a lease: this process's name on the leases it takes, and whether the holder of a
//! lease is provably a process that is gone (then recovery takes its entries at once, instead of
//! waiting for the lease to run out).
//!
//! A name is `host=<hostname> boot=<boot id> pidns=<pid namespace> pid=<pid> start=<start time>
//! id=<random>`. A holder is gone only when this process can see it: the same boot of the same
//! kernel (`/proc/sys/kernel/random/boot_id`) and the same PID namespace
//! (`/proc/self/ns/pid`), with a `/proc` that is this namespace's own and shows every process
//! (not mounted `hidepid`). Then it is gone when its pid is not there, belongs to a process
//! started at another time (clock ticks since boot, from `/proc/<pid>/stat`), or is a zombie
//! with no thread left (killed, not yet reaped). Anything else (another host, another container
//! with the same host name, a name from an older version, a `/proc` entry this user may not
//! read) cannot be told, and the holder's lease runs out.

/// This process's name, drawn once per journal opened.
pub(crate) fn this_process() -> String {
    let pid = std::process::id();
    format!(
        "host={} boot={} pidns={} pid={pid} start={} id={}",
        hostname(),
        boot_id().unwrap_or_default(),
        pid_namespace().unwrap_or_default(),
        stat(pid).found().map(|s| s.start).unwrap_or_default(),
        uuid::Uuid::new_v4().simple()
    )
}

/// True only when `holder` names a process this process can prove is not running any more.
/// False whenever it cannot be told.
pub(crate) fn is_gone_here(holder: &str) -> bool {
    judge(
        holder,
        &View {
            host: hostname(),
            boot: boot_id(),
            pidns: pid_namespace(),
            proc_is_ours: proc_is_ours(),
            proc_shows_every_process: proc_shows_every_process(),
            stat: &stat,
            threads: &threads,
        },
    )
}

/// What a process can see of the others: its own host, boot and PID namespace, its `/proc`,
/// and what that `/proc` shows of a pid.
pub(crate) struct View<'a> {
    pub host: String,
    pub boot: Option<String>,
    pub pidns: Option<String>,
    /// `/proc` is this PID namespace's own.
    pub proc_is_ours: bool,
    /// `/proc` is not mounted `hidepid`.
    pub proc_shows_every_process: bool,
    pub stat: &'a dyn Fn(u32) -> Seen,
    pub threads: &'a dyn Fn(u32) -> Option<u32>,
}

/// The rule, on what `here` sees: `holder` is gone only when it ran in the same boot and PID
/// namespace as the viewer, whose `/proc` shows every process, and its pid is missing, reused
/// (another start time) or a zombie with no live thread.
pub(crate) fn judge(holder: &str, here: &View<'_>) -> bool {
    let field = |name: &str| {
        holder
            .split(' ')
            .find_map(|part| part.strip_prefix(name)?.strip_prefix('='))
            .filter(|v| !v.is_empty())
    };
    let (Some(host), Some(boot), Some(ns), Some(pid), Some(start)) = (
        field("host"),
        field("boot"),
        field("pidns"),
        field("pid"),
        field("start"),
    ) else {
        return false;
    };
    let Ok(pid) = pid.parse::<u32>() else {
        return false;
    };
    let same_view = if whish_core::lies::on(whish_core::lies::Lie::OtherNamespaceDead) {
        host == here.host
    } else {
        host == here.host
            && here.boot.as_deref() == Some(boot)
            && here.pidns.as_deref() == Some(ns)
            && here.proc_is_ours
            && here.proc_shows_every_process
    };
    if !same_view {
        return false;
    }
    match (here.stat)(pid) {
        Seen::Missing => true,
        Seen::Unreadable => false,
        Seen::Found(now) if now.start != start => true,
        Seen::Found(now) => {
            (now.state == 'Z' || now.state == 'X') && (here.threads)(pid) == Some(1)
        }
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty() && !h.contains(' '))
        .unwrap_or_else(|| "unknown".to_owned())
}

/// This boot of this kernel: shared by every container on it, new after a reboot.
fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|b| b.trim().to_owned())
        .filter(|b| !b.is_empty() && !b.contains(' '))
}

/// This process's PID namespace (`pid:[4026531836]`): two processes see each other's pids only
/// inside the same one.
fn pid_namespace() -> Option<String> {
    let link = std::fs::read_link("/proc/self/ns/pid").ok()?;
    let ns = link.to_str()?.to_owned();
    (!ns.is_empty() && !ns.contains(' ')).then_some(ns)
}

/// Whether `/proc` shows this process under its own pid: a `/proc` mounted from another PID
/// namespace names other processes by these numbers.
fn proc_is_ours() -> bool {
    std::fs::read_link("/proc/self")
        .ok()
        .and_then(|p| p.to_str()?.parse::<u32>().ok())
        == Some(std::process::id())
}

/// Whether `/proc` was mounted to hide other users' processes (`hidepid=1`, `2`,
/// `invisible`, `noaccess`): then a pid not found there may be a live process of another user.
fn proc_shows_every_process() -> bool {
    let Ok(mounts) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    mounts
        .lines()
        .filter(|line| line.split(' ').nth(4) == Some("/proc"))
        .all(|line| {
            line.split([' ', ','])
                .filter_map(|option| option.strip_prefix("hidepid="))
                .all(|v| v == "0" || v == "off")
        })
}

/// The number of threads of the process `pid` (its `Threads:` line), when it can be read.
fn threads(pid: u32) -> Option<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))?
        .trim()
        .parse()
        .ok()
}

/// What this process can see of a pid in `/proc`.
pub(crate) enum Seen {
    /// No such process.
    Missing,
    /// There, but not readable by this user: alive as far as anyone here can tell.
    Unreadable,
    /// There, and read.
    Found(Stat),
}

/// What `/proc/<pid>/stat` says of a process.
pub(crate) struct Stat {
    /// Field 3: `R`, `S`, `D`, `Z` (zombie), `X` (dead), ...
    pub state: char,
    /// Field 22: when the process started, in clock ticks after boot.
    pub start: String,
}

fn stat(pid: u32) -> Seen {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Seen::Missing,
        Err(_) => Seen::Unreadable,
        Ok(text) => parse_stat(&text).map_or(Seen::Unreadable, Seen::Found),
    }
}

fn parse_stat(stat: &str) -> Option<Stat> {
    // The command name (field 2) is in parentheses and may hold spaces: count after the last ')'.
    let mut after = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = after.next()?.chars().next()?;
    let start = after.nth(18)?.to_owned();
    Some(Stat { state, start })
}

impl Seen {
    fn found(self) -> Option<Stat> {
        match self {
            Seen::Found(s) => Some(s),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name_of(pid: u32, start: &str) -> String {
        format!(
            "host={} boot={} pidns={} pid={pid} start={start} id=x",
            hostname(),
            boot_id().unwrap_or_default(),
            pid_namespace().unwrap_or_default(),
        )
    }

    fn proc_readable() -> bool {
        std::path::Path::new("/proc/self/stat").exists()
            && proc_is_ours()
            && proc_shows_every_process()
    }

    #[test]
    fn this_process_is_alive_and_a_reaped_one_is_gone() {
        let me = this_process();
        assert!(me.contains(&format!("pid={}", std::process::id())));
        if !proc_readable() {
            return;
        }
        assert!(!is_gone_here(&me), "{me}");
        let mut child = std::process::Command::new("true").spawn().expect("spawn");
        let pid = child.id();
        let start = stat(pid)
            .found()
            .map_or_else(|| "1".to_owned(), |s| s.start);
        child.wait().expect("wait");
        let gone = name_of(pid, &start);
        assert!(is_gone_here(&gone), "{gone}");
    }

    #[test]
    fn a_killed_process_not_yet_reaped_is_gone() {
        if !proc_readable() {
            return;
        }
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("spawn");
        let pid = child.id();
        let start = stat(pid).found().expect("the child's stat").start;
        let name = name_of(pid, &start);
        assert!(!is_gone_here(&name), "a running child is alive: {name}");
        child.kill().expect("kill");
        // Killed and not waited for: a zombie until reaped.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while stat(pid).found().is_some_and(|s| s.state != 'Z')
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(is_gone_here(&name), "a zombie is gone: {name}");
        child.wait().expect("reap");
    }

    #[test]
    fn a_holder_this_process_cannot_see_is_never_gone() {
        let absent = u32::MAX - 7;
        // Another PID namespace (a container with the same host name), another boot, another
        // host, and names without the fields: none can be told, whatever /proc says here.
        let other_ns = format!(
            "host={} boot={} pidns=pid:[1] pid={absent} start=1 id=x",
            hostname(),
            boot_id().unwrap_or_default()
        );
        assert!(!is_gone_here(&other_ns), "{other_ns}");
        let other_boot = format!(
            "host={} boot=another-boot pidns={} pid={absent} start=1 id=x",
            hostname(),
            pid_namespace().unwrap_or_default()
        );
        assert!(!is_gone_here(&other_boot), "{other_boot}");
        assert!(!is_gone_here(&format!(
            "host=elsewhere boot={} pidns={} pid={absent} start=1 id=x",
            boot_id().unwrap_or_default(),
            pid_namespace().unwrap_or_default()
        )));
        let old_format = format!("host={} pid={absent} start=1 id=x", hostname());
        assert!(!is_gone_here(&old_format), "{old_format}");
        assert!(!is_gone_here("a name from another version"));
        if proc_readable() {
            assert!(
                is_gone_here(&name_of(absent, "1")),
                "the same view, no such pid"
            );
        }
    }
}
