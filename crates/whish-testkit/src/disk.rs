//! A disk that fills up: a small tmpfs, mounted for one test and unmounted when dropped.

use std::path::PathBuf;
use std::process::Command;

/// A mounted tmpfs; lazily unmounted when dropped.
#[derive(Debug)]
pub struct Tmpfs(pub PathBuf);

impl Tmpfs {
    /// The mount point.
    pub fn path(&self) -> &std::path::Path {
        &self.0
    }

    /// Fill the disk: a file (`filler` at the mount point, returned) written until the next
    /// block no longer fits. Remove it to make room again.
    pub fn fill(&self) -> PathBuf {
        use std::io::Write;
        let path = self.0.join("filler");
        let mut f = std::fs::File::create(&path).expect("the filler file");
        let block = vec![0u8; 4096];
        while f.write_all(&block).is_ok() {}
        let _ = f.sync_all();
        path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// A tmpfs of `size` (`256k`, `4m`) at a fresh directory (see [`crate::temp_dir`]: two tests
/// mounting at the same instant never stack on one mount point), or `None` when it cannot be
/// mounted here (not root).
pub fn tmpfs(size: &str) -> Option<Tmpfs> {
    let dir = crate::temp_dir("whish-tmpfs");
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(&dir)
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(Tmpfs(dir))
}

/// [`tmpfs`] for `test`, which cannot run without it: says so ([`crate::not_run`], which fails
/// under CI) when it cannot be mounted, and the test then returns.
pub fn tmpfs_for(test: &str, size: &str) -> Option<Tmpfs> {
    let mounted = tmpfs(size);
    if mounted.is_none() {
        crate::not_run(test, "the test", "cannot mount a tmpfs here (not root?)");
    }
    mounted
}
