//! Who holds a lease: this process's name on the leases it takes, and whether the holder of a
//! lease is a process of this host that is gone (then recovery takes its entries at once,
//! instead of waiting for the lease to run out).
//!
//! A name is `host=<hostname> pid=<pid> start=<start time> id=<random>`. The start time (clock
//! ticks since boot, from `/proc/<pid>/stat`) tells a process apart from a later one that got the
//! same pid. Where `/proc` is not there, no holder is ever taken for dead: its lease runs out.

/// This process's name, drawn once per journal opened.
pub(crate) fn this_process() -> String {
    let pid = std::process::id();
    format!(
        "host={} pid={pid} start={} id={}",
        hostname(),
        start_time(pid).unwrap_or_default(),
        uuid::Uuid::new_v4().simple()
    )
}

/// True when `holder` names a process of this host that is not running any more (its pid is
/// gone, or belongs to a process started at another time). False when it cannot be told.
pub(crate) fn is_gone_here(holder: &str) -> bool {
    let field = |name: &str| {
        holder
            .split(' ')
            .find_map(|part| part.strip_prefix(name)?.strip_prefix('='))
    };
    let (Some(host), Some(pid), Some(start)) = (field("host"), field("pid"), field("start")) else {
        return false;
    };
    if host != hostname() || start.is_empty() {
        return false;
    }
    let Ok(pid) = pid.parse::<u32>() else {
        return false;
    };
    if !std::path::Path::new("/proc/self/stat").exists() {
        return false;
    }
    match start_time(pid) {
        None => true,
        Some(now) => now != start,
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty() && !h.contains(' '))
        .unwrap_or_else(|| "unknown".to_owned())
}

/// Field 22 of `/proc/<pid>/stat`: when the process started, in clock ticks after boot.
fn start_time(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count after the last ')'.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_finished_one_is_gone() {
        let me = this_process();
        assert!(me.contains(&format!("pid={}", std::process::id())));
        if !std::path::Path::new("/proc/self/stat").exists() {
            return;
        }
        assert!(!is_gone_here(&me), "{me}");
        let mut child = std::process::Command::new("true").spawn().expect("spawn");
        let pid = child.id();
        let start = start_time(pid);
        child.wait().expect("wait");
        let gone = format!(
            "host={} pid={pid} start={} id=x",
            hostname(),
            start.unwrap_or_else(|| "1".to_owned())
        );
        assert!(is_gone_here(&gone), "{gone}");
        assert!(!is_gone_here("host=elsewhere pid=1 start=1 id=x"));
        assert!(!is_gone_here("a name from another version"));
    }
}
