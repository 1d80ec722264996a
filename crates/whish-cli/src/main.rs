//! The `whish` command. Its commands land with issue 8; for now it says so and exits 2.

fn main() {
    eprintln!("whish: the command-line tool is not built yet (see issue 8); nothing was sent");
    std::process::exit(2);
}
