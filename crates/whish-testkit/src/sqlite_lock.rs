//! Another process holding a SQLite file's write lock, as a long batch or an admin's shell does.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

/// Has the `sqlite3` shell (another process) take the write lock of the SQLite file at `db`
/// (`BEGIN IMMEDIATE`) and keep it for `hold`. Returns once the lock is held, with the thread
/// that lets it go; `None` when `sqlite3` is missing or could not take the lock.
pub fn hold_write_lock(db: &Path, hold: Duration) -> Option<JoinHandle<()>> {
    let mut child = Command::new("sqlite3")
        .arg(db)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .ok()?;
    let mut stdin = child.stdin.take()?;
    let mut stdout = BufReader::new(child.stdout.take()?);
    writeln!(
        stdin,
        ".bail on\n.timeout 10000\nBEGIN IMMEDIATE;\nSELECT 'locked';"
    )
    .ok()?;
    stdin.flush().ok()?;
    let mut line = String::new();
    stdout.read_line(&mut line).ok()?;
    if line.trim() != "locked" {
        let _ = child.kill();
        return None;
    }
    eprintln!(
        "sqlite3 (pid {}) holds the write lock of {}",
        child.id(),
        db.display()
    );
    Some(std::thread::spawn(move || {
        std::thread::sleep(hold);
        let _ = writeln!(stdin, "ROLLBACK;\n.quit");
        drop(stdin);
        let _ = child.wait();
        eprintln!("sqlite3 let the write lock go");
    }))
}
