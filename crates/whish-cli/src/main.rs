//! The `whish` command. See `whish --help` and the README; the exit status contract is in
//! [`output`].

mod cli;
mod collect;
mod demo;
mod input;
mod locations;
mod output;
mod settings;
mod topup;
mod transfer;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command, SandboxCmd};
use output::Out;
use settings::Ctx;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    ExitCode::SUCCESS
                }
                _ => output::exit(output::USAGE),
            };
        }
    };
    init_tracing(cli.global.verbose);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("whish: cannot start the async runtime: {e}");
            return output::exit(output::TRANSPORT);
        }
    };
    let status = runtime.block_on(run(cli));
    output::exit(status)
}

fn init_tracing(verbose: u8) {
    use tracing_subscriber::EnvFilter;
    let filter = match verbose {
        0 => match std::env::var("RUST_LOG") {
            Ok(v) if !v.is_empty() => EnvFilter::new(v),
            _ => return,
        },
        1 => EnvFilter::new("info"),
        2 => EnvFilter::new("debug"),
        _ => EnvFilter::new("trace"),
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

async fn run(cli: Cli) -> u8 {
    let json = match cli.global.output {
        Some(cli::OutputFormat::Json) => true,
        Some(cli::OutputFormat::Table) => false,
        None => !std::io::stdout().is_terminal(),
    };
    let out = Out { json };
    let policy = match settings::policy(&cli.global) {
        Ok(p) => p,
        Err(status) => return status,
    };
    let ctx = Ctx {
        settings: cli.settings,
        policy,
        out,
        allow_local_callbacks: cli.global.allow_local_callbacks,
    };
    let done = match cli.command {
        Command::Transfer(c) => transfer::run(&ctx, c).await,
        Command::Locations(c) => locations::locations(&ctx, c).await,
        Command::Collect(c) => collect::run(&ctx, c).await,
        Command::Topup(c) => topup::topup(&ctx, c).await,
        Command::Sandbox(SandboxCmd::Serve { port, strict }) => serve(port, strict).await,
        Command::Demo => demo::run(std::io::stdout().is_terminal()).await,
    };
    done.unwrap_or_else(|status| status)
}

/// `whish sandbox serve`: run until Ctrl-C, after printing the settings as `export` lines.
async fn serve(port: u16, strict: bool) -> output::Done {
    let sandbox = whish_sandbox::Sandbox::builder()
        .port(port)
        .strict(strict)
        .start()
        .await
        .map_err(|e| output::usage(format!("cannot listen on 127.0.0.1:{port}: {e}")))?;
    print!("{}", sandbox.env_exports());
    println!(
        "# control API: {}/_sandbox/  (stop with Ctrl-C)",
        sandbox.root_url()
    );
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    let _ = tokio::signal::ctrl_c().await;
    sandbox.shutdown().await;
    Ok(output::OK)
}
