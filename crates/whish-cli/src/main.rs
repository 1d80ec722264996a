//! The `whish` command. See `whish --help` and the README; the exit status contract is in
//! [`output`].

mod batch_defaults;
mod check_callback;
mod cli;
mod collect;
mod demo;
mod input;
mod journal;
mod locations;
mod output;
mod payouts;
mod printed;
mod reconcile;
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
                _ => output::exit(output::NOT_SENT),
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
            return output::exit(output::UNKNOWN);
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
    // Colour only on a terminal: a pipe or a file gets plain text.
    use std::io::IsTerminal as _;
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
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
    let ctx = |settings| Ctx {
        settings,
        policy,
        out,
        allow_local_callbacks: cli.global.allow_local_callbacks,
    };
    let done = match cli.command {
        Command::Transfer(a) => transfer::run(&ctx(a.settings.into()), a.command).await,
        Command::Locations(a) => locations::locations(&ctx(a.settings.into()), a.command).await,
        Command::Collect(a) => collect::run(&ctx(a.settings.into()), a.command).await,
        Command::Topup(a) => topup::topup(&ctx(a.settings.into()), a.command).await,
        Command::Journal(a) => journal::run(&ctx(a.settings.into()), a.command).await,
        Command::Payouts(a) => payouts::run(&ctx(a.settings.into()), a.command).await,
        Command::Reconcile(a) => reconcile::run(&ctx(a.settings.into()), a.command).await,
        Command::Sandbox(SandboxCmd::Serve(args)) => serve(args).await,
        Command::Demo => demo::run(std::io::stdout().is_terminal()).await,
    };
    let status = done.unwrap_or_else(|status| status);
    settings::flush_journal().await;
    settings::check_journal_at_exit();
    status
}

/// `whish sandbox serve`: run until Ctrl-C, after printing the settings as `export` lines.
async fn serve(a: cli::ServeArgs) -> output::Done {
    let mut b = whish_sandbox::Sandbox::builder()
        .port(a.port)
        .bind(a.bind)
        .lenient(a.lenient);
    if let Some(key) = &a.callback_key {
        b = b.callback_key(key.as_bytes());
    }
    let defaults = whish_sandbox::Sandbox::builder();
    let t = defaults.transfer_credentials_issued();
    let c = defaults.collect_credentials_issued();
    let p = defaults.topup_credentials_issued();
    b = b
        .transfer_credentials(
            a.transfer_username.as_deref().unwrap_or(&t.username),
            a.transfer_key.as_deref().unwrap_or(&t.key),
        )
        .collect_credentials(
            a.collect_channel.as_deref().unwrap_or(&c.channel),
            a.collect_secret.as_deref().unwrap_or(&c.secret),
            a.collect_website_url.as_deref().unwrap_or(&c.website_url),
        )
        .topup_credentials(
            a.topup_session_id.as_deref().unwrap_or(&p.session_id),
            a.topup_token.as_deref().unwrap_or(&p.token),
        );
    if !a.bind.is_loopback() {
        eprintln!(
            "whish: warning: listening on {}: the sandbox's control API has no credentials; anyone who can reach this address can drive or reset it",
            a.bind
        );
    }
    let sandbox = b
        .start()
        .await
        .map_err(|e| output::usage(format!("cannot listen on {}:{}: {e}", a.bind, a.port)))?;
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
