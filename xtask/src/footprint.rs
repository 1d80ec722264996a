//! `cargo xtask footprint [--no-build]`: for each service alone with the default TLS stack, for
//! the money-transfer service with each other TLS stack, and for all four services, the number of
//! crates a facade build compiles (normal dependencies, then with the build scripts' own) and its
//! cold build time (an empty target directory, dev profile), so a dependency that bloats the
//! build shows up as a number. Goal: a single-service build of at most 85 crates, under 30 s.

use std::path::Path;
use std::time::Instant;

use crate::cargo_with_target;
use crate::features::{DEFAULT_TLS, SERVICES, TLS, expand, tree_edges};

pub fn run(root: &Path, build: bool) -> Result<(), String> {
    let mut cases: Vec<(String, String)> = SERVICES
        .iter()
        .map(|(f, _)| (f.to_string(), format!("{f},{DEFAULT_TLS}")))
        .collect();
    for (tls, _) in TLS.iter().filter(|(t, _)| *t != DEFAULT_TLS) {
        cases.push((
            format!("money-transfer + {tls}"),
            format!("money-transfer,{tls}"),
        ));
    }
    cases.push(("all four".to_owned(), "all".to_owned()));
    println!("default TLS stack: {DEFAULT_TLS}");
    println!(
        "{:<34} {:>7} {:>13} {:>11}",
        "features", "crates", "+build deps", "cold build"
    );
    for (label, features) in cases {
        let crates = tree_edges(root, Some(&features), "normal")?.len();
        let with_build = tree_edges(root, Some(&features), "normal,build")?.len();
        let time = if build {
            let target = root
                .join("target")
                .join("footprint")
                .join(label.replace([' ', '+'], "_"));
            let _ = std::fs::remove_dir_all(&target);
            let features = expand(&features);
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
                    &features,
                ],
                &target,
            )?;
            let secs = started.elapsed().as_secs_f64();
            let _ = std::fs::remove_dir_all(&target);
            format!("{secs:.1} s")
        } else {
            "-".to_owned()
        };
        println!("{label:<34} {crates:>7} {with_build:>13} {time:>11}");
    }
    Ok(())
}
