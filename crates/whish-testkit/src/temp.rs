//! Fresh temporary directories: one per call, never shared by two tests of one binary.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

/// A new, empty directory under the system's temporary directory, named by `prefix`, this
/// process and a counter: two tests of one test binary (one process) never get the same one.
///
/// # Panics
/// When the directory cannot be created.
pub fn temp_dir(prefix: &str) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "{prefix}-{}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed),
        fastrand_part()
    ));
    std::fs::create_dir_all(&dir).expect("create a temporary directory");
    dir
}

/// A few random bits so that a directory left by an earlier run of the same pid is not reused.
fn fastrand_part() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u8(0);
    h.finish() as u32
}

/// A file named `name` holding `contents`, in a fresh [`temp_dir`].
///
/// # Panics
/// When it cannot be written.
pub fn temp_file(prefix: &str, name: &str, contents: &str) -> PathBuf {
    let path = temp_dir(prefix).join(name);
    std::fs::write(&path, contents).expect("write a temporary file");
    path
}
