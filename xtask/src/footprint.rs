//! `cargo xtask footprint [--no-build]`: for each service alone and for all four, the number of
//! crates a facade build compiles and its cold build time (an empty target directory, dev
//! profile), so a dependency that bloats the build shows up as a number.

use std::path::Path;
use std::time::Instant;

use crate::cargo_with_target;
use crate::features::{SERVICES, tree};

pub fn run(root: &Path, build: bool) -> Result<(), String> {
    let mut cases: Vec<&str> = SERVICES.iter().map(|(f, _)| *f).collect();
    cases.push("all");
    println!("{:<16} {:>7} {:>12}", "features", "crates", "cold build");
    for feature in cases {
        let crates = tree(root, Some(feature))?.len();
        let time = if build {
            let target = root.join("target").join("footprint").join(feature);
            let _ = std::fs::remove_dir_all(&target);
            let features = if feature == "all" {
                "money-transfer,locations,hosted-collect,intl-topup"
            } else {
                feature
            };
            let started = Instant::now();
            cargo_with_target(
                root,
                &[
                    "build",
                    "--quiet",
                    "--locked",
                    "-p",
                    "whish",
                    "--no-default-features",
                    "--features",
                    features,
                ],
                &target,
            )?;
            let secs = started.elapsed().as_secs_f64();
            let _ = std::fs::remove_dir_all(&target);
            format!("{secs:.1} s")
        } else {
            "-".to_owned()
        };
        println!("{feature:<16} {crates:>7} {time:>12}");
    }
    Ok(())
}
