//! The command line: services, commands, flags and the environment variables behind them.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// The exit statuses, as `whish --help` ends with them.
const EXIT_STATUS: &str = "Exit status:
  0  success: the service accepted or confirmed it
  1  refused: the service answered a failure code (final, nothing done)
  2  nothing was sent: bad usage, configuration or input
  3  Pending: the outcome is unknown, not failed
  4  the outcome is unknown (a timeout, a lost reply, a page without the service's envelope):
     keep the key, resend or recover
  5  a payouts run stopped before its end: run it again
  6  a reconciliation found differences";

/// whish: every operation of the whish money-transfer, hosted-collect and top-up services.
#[derive(Debug, Parser)]
#[command(name = "whish", version, about, long_about = None, after_help = EXIT_STATUS)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    #[command(flatten)]
    pub global: Global,
}

/// Flags of every command.
#[derive(Debug, Args)]
pub struct Global {
    /// Per-attempt timeout in seconds.
    #[arg(
        long,
        global = true,
        value_name = "SECS",
        help_heading = "Global options"
    )]
    pub timeout: Option<f64>,
    /// Resends after the first attempt (only where a resend is safe).
    #[arg(long, global = true, value_name = "N", help_heading = "Global options")]
    pub retries: Option<u32>,
    /// Output format; json when stdout is not a terminal.
    #[arg(long, global = true, value_enum, help_heading = "Global options")]
    pub output: Option<OutputFormat>,
    /// Accept loopback or private callback addresses (only with a loopback base URL: the sandbox).
    #[arg(long, global = true, help_heading = "Global options")]
    pub allow_local_callbacks: bool,
    /// Log to stderr (-v info, -vv debug, -vvv trace); RUST_LOG works too. Secrets never print.
    #[arg(short, long, global = true, action = clap::ArgAction::Count, help_heading = "Global options")]
    pub verbose: u8,
}

/// A service's commands with the client settings they read (flags or `WHISH_*` variables). The
/// settings belong to the service commands only: `whish sandbox serve` and `whish demo` do not
/// take them.
#[derive(Debug, Args)]
pub struct ServiceArgs<C: Subcommand, S: Args> {
    #[command(subcommand)]
    pub command: C,
    #[command(flatten)]
    pub settings: S,
}

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// One JSON value.
    Json,
    /// A readable table.
    Table,
}

/// Service settings, each a flag or an environment variable: the union a command reads, built
/// from the groups its service takes, so that each command's help lists only its own.
#[derive(Debug, Default)]
pub struct Settings {
    pub transfer_base_url: Option<String>,
    pub transfer_username: Option<String>,
    pub transfer_key: Option<String>,
    pub collect_base_url: Option<String>,
    pub collect_channel: Option<String>,
    pub collect_secret: Option<String>,
    pub collect_website_url: Option<String>,
    pub collect_brand: Option<String>,
    pub topup_base_url: Option<String>,
    pub topup_session_id: Option<String>,
    pub topup_token: Option<String>,
    pub topup_language: Option<String>,
    pub user_agent: Option<String>,
    pub journal: Option<String>,
}

/// The transfer account (transfer, locations, payouts, reconcile, journal).
#[derive(Debug, Args)]
pub struct TransferAccount {
    /// The transfer service base URL (its `/api` included).
    #[arg(
        long,
        global = true,
        env = "WHISH_TRANSFER_BASE_URL",
        hide_env_values = true,
        help_heading = "Transfer account"
    )]
    pub transfer_base_url: Option<String>,
    /// The transfer account username.
    #[arg(
        long,
        global = true,
        env = "WHISH_TRANSFER_USERNAME",
        hide_env_values = true,
        help_heading = "Transfer account"
    )]
    pub transfer_username: Option<String>,
    /// The transfer account key (secret: prefer the environment variable).
    #[arg(
        long,
        global = true,
        env = "WHISH_TRANSFER_KEY",
        hide_env_values = true,
        help_heading = "Transfer account"
    )]
    pub transfer_key: Option<String>,
}

impl TransferAccount {
    /// Put these settings into `s`.
    pub fn apply(self, s: &mut Settings) {
        s.transfer_base_url = self.transfer_base_url;
        s.transfer_username = self.transfer_username;
        s.transfer_key = self.transfer_key;
    }
}

/// The collect account (collect, reconcile, journal).
#[derive(Debug, Args)]
pub struct CollectAccount {
    /// The hosted-collect service base URL.
    #[arg(
        long,
        global = true,
        env = "WHISH_COLLECT_BASE_URL",
        hide_env_values = true,
        help_heading = "Collect account"
    )]
    pub collect_base_url: Option<String>,
    /// The collect channel issued to the merchant.
    #[arg(
        long,
        global = true,
        env = "WHISH_COLLECT_CHANNEL",
        hide_env_values = true,
        help_heading = "Collect account"
    )]
    pub collect_channel: Option<String>,
    /// The collect secret (prefer the environment variable).
    #[arg(
        long,
        global = true,
        env = "WHISH_COLLECT_SECRET",
        hide_env_values = true,
        help_heading = "Collect account"
    )]
    pub collect_secret: Option<String>,
    /// The websiteUrl issued with the collect keys.
    #[arg(
        long,
        global = true,
        env = "WHISH_COLLECT_WEBSITE_URL",
        hide_env_values = true,
        help_heading = "Collect account"
    )]
    pub collect_website_url: Option<String>,
    /// The path segment of the collect create and refund (`/payment/SEGMENT`): `whish`, the
    /// live service's (default), or `svc`, the specification's spelling.
    #[arg(
        long,
        global = true,
        env = "WHISH_COLLECT_BRAND",
        value_name = "SEGMENT",
        help_heading = "Collect account"
    )]
    pub collect_brand: Option<String>,
}

impl CollectAccount {
    /// Put these settings into `s`.
    pub fn apply(self, s: &mut Settings) {
        s.collect_base_url = self.collect_base_url;
        s.collect_channel = self.collect_channel;
        s.collect_secret = self.collect_secret;
        s.collect_website_url = self.collect_website_url;
        s.collect_brand = self.collect_brand;
    }
}

/// The top-up account (topup, journal).
#[derive(Debug, Args)]
pub struct TopupAccount {
    /// The top-up service base URL.
    #[arg(
        long,
        global = true,
        env = "WHISH_TOPUP_BASE_URL",
        hide_env_values = true,
        help_heading = "Top-up account"
    )]
    pub topup_base_url: Option<String>,
    /// The top-up sessionId (secret: prefer the environment variable).
    #[arg(
        long,
        global = true,
        env = "WHISH_TOPUP_SESSION_ID",
        hide_env_values = true,
        help_heading = "Top-up account"
    )]
    pub topup_session_id: Option<String>,
    /// The top-up token (secret: prefer the environment variable).
    #[arg(
        long,
        global = true,
        env = "WHISH_TOPUP_TOKEN",
        hide_env_values = true,
        help_heading = "Top-up account"
    )]
    pub topup_token: Option<String>,
    /// A `language` header on every top-up request (the service's sample sends one, with no
    /// meaning described; none by default).
    #[arg(
        long,
        global = true,
        env = "WHISH_TOPUP_LANGUAGE",
        value_name = "LANG",
        help_heading = "Top-up account"
    )]
    pub topup_language: Option<String>,
}

impl TopupAccount {
    /// Put these settings into `s`.
    pub fn apply(self, s: &mut Settings) {
        s.topup_base_url = self.topup_base_url;
        s.topup_session_id = self.topup_session_id;
        s.topup_token = self.topup_token;
        s.topup_language = self.topup_language;
    }
}

/// The settings of every service command: the User-Agent and the journal.
#[derive(Debug, Args)]
pub struct Common {
    /// The User-Agent the collect and top-up services require: `AppName/version (website;
    /// contact-email)`.
    #[arg(
        long,
        global = true,
        env = "WHISH_USER_AGENT",
        hide_env_values = true,
        help_heading = "Account settings"
    )]
    pub user_agent: Option<String>,
    /// The journal every money-moving command records in before sending: `sqlite:PATH` or
    /// `postgres://...` (default: a SQLite file in the user's data directory).
    #[arg(
        long,
        global = true,
        env = "WHISH_JOURNAL",
        hide_env_values = true,
        value_name = "URL",
        help_heading = "Account settings"
    )]
    pub journal: Option<String>,
}

impl Common {
    /// Put these settings into `s`.
    pub fn apply(self, s: &mut Settings) {
        s.user_agent = self.user_agent;
        s.journal = self.journal;
    }
}

/// The settings of the transfer, locations and payouts commands.
#[derive(Debug, Args)]
pub struct TransferSettings {
    #[command(flatten)]
    transfer_account: TransferAccount,
    #[command(flatten)]
    common: Common,
}

impl From<TransferSettings> for Settings {
    fn from(a: TransferSettings) -> Settings {
        let mut s = Settings::default();
        a.transfer_account.apply(&mut s);
        a.common.apply(&mut s);
        s
    }
}

/// The settings of the collect commands.
#[derive(Debug, Args)]
pub struct CollectSettings {
    #[command(flatten)]
    collect_account: CollectAccount,
    #[command(flatten)]
    common: Common,
}

impl From<CollectSettings> for Settings {
    fn from(a: CollectSettings) -> Settings {
        let mut s = Settings::default();
        a.collect_account.apply(&mut s);
        a.common.apply(&mut s);
        s
    }
}

/// The settings of the top-up commands.
#[derive(Debug, Args)]
pub struct TopupSettings {
    #[command(flatten)]
    topup_account: TopupAccount,
    #[command(flatten)]
    common: Common,
}

impl From<TopupSettings> for Settings {
    fn from(a: TopupSettings) -> Settings {
        let mut s = Settings::default();
        a.topup_account.apply(&mut s);
        a.common.apply(&mut s);
        s
    }
}

/// The settings of reconcile: the transfer and collect accounts.
#[derive(Debug, Args)]
pub struct ReconcileSettings {
    #[command(flatten)]
    transfer_account: TransferAccount,
    #[command(flatten)]
    collect_account: CollectAccount,
    #[command(flatten)]
    common: Common,
}

impl From<ReconcileSettings> for Settings {
    fn from(a: ReconcileSettings) -> Settings {
        let mut s = Settings::default();
        a.transfer_account.apply(&mut s);
        a.collect_account.apply(&mut s);
        a.common.apply(&mut s);
        s
    }
}

/// Every service's settings (the journal recovers entries of all three).
#[derive(Debug, Args)]
pub struct AllSettings {
    #[command(flatten)]
    transfer_account: TransferAccount,
    #[command(flatten)]
    collect_account: CollectAccount,
    #[command(flatten)]
    topup_account: TopupAccount,
    #[command(flatten)]
    common: Common,
}

impl From<AllSettings> for Settings {
    fn from(a: AllSettings) -> Settings {
        let mut s = Settings::default();
        a.transfer_account.apply(&mut s);
        a.collect_account.apply(&mut s);
        a.topup_account.apply(&mut s);
        a.common.apply(&mut s);
        s
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Money transfers into Lebanon.
    Transfer(ServiceArgs<TransferCmd, TransferSettings>),
    /// Cash-collection locations.
    Locations(ServiceArgs<LocationsCmd, TransferSettings>),
    /// Hosted wallet-payment collection.
    Collect(ServiceArgs<CollectCmd, CollectSettings>),
    /// International top-up.
    Topup(ServiceArgs<TopupCmd, TopupSettings>),
    /// The journal of money-moving requests: list, show, recover.
    Journal(ServiceArgs<JournalCmd, AllSettings>),
    /// Payouts at scale: a file of transfers sent as one resumable, journaled batch; its
    /// follow-up; the cancel of what was not collected.
    Payouts(ServiceArgs<PayoutsCmd, TransferSettings>),
    /// End-of-day reconciliation: the journal against the service's own records.
    Reconcile(ServiceArgs<ReconcileCmd, ReconcileSettings>),
    /// The local sandbox of all three services.
    #[command(subcommand)]
    Sandbox(SandboxCmd),
    /// Start the sandbox in-process and walk every flow through the SDK, step by step.
    Demo,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
#[value(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Mode {
    CashCollection,
    MobileWallet,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
#[value(rename_all = "UPPER")]
pub enum Cur {
    Usd,
    Lbp,
}

#[derive(Debug, Subcommand)]
pub enum TransferCmd {
    /// Quote the fee of a transfer.
    Fees {
        /// The sending country's id (`transfer countries` lists them).
        #[arg(long, value_name = "ID", allow_negative_numbers = true)]
        from_country: i64,
        /// The currency sent.
        #[arg(long, value_enum)]
        currency: Cur,
        /// The amount, plain decimal text (`100`, `12.50`).
        #[arg(long, value_name = "N", allow_hyphen_values = true)]
        amount: String,
        /// Cash collection (the default) or mobile wallet.
        #[arg(long, value_enum)]
        payment_mode: Option<Mode>,
        /// Take the fee out of the amount instead of adding it.
        #[arg(long)]
        deduct_fees: bool,
        /// The receiver's phone the fee is quoted for.
        #[arg(long, value_name = "P")]
        phone_number: Option<String>,
    },
    /// Create a new transfer from a JSON file shaped as the spec's request body; resent safely.
    Send {
        /// The request body: a JSON file shaped as the service's create request.
        #[arg(long, value_name = "FILE")]
        body: PathBuf,
        /// Your own numeric reference as the Request-id of this NEW transfer (default: a new one,
        /// printed before sending). To resend an earlier send, use `transfer resend`.
        #[arg(long, value_name = "N", allow_negative_numbers = true)]
        request_id: Option<i64>,
        /// The total the customer was quoted and agreed to (`transfer fees`, `totalAmount`):
        /// the body's own terms are quoted again first, and nothing is sent (exit 2) unless
        /// the total is still this amount.
        #[arg(long, value_name = "N")]
        quoted_total: Option<String>,
        /// When the answer is Pending or the outcome unknown, follow the transfer up for up to
        /// SECS (status by Request-id; a send that never arrived is sent again under its own
        /// Request-id) and record what it became in the journal.
        #[arg(long, value_name = "SECS")]
        wait: Option<u64>,
        /// Send it even when the journal holds this exact body as a send under another
        /// Request-id whose outcome is still open. Without it such a send is refused (exit 2):
        /// it is most often the same transfer sent twice by hand, where `transfer resend`
        /// under the earlier Request-id was meant.
        #[arg(long)]
        allow_repeat: bool,
    },
    /// Resend an earlier send whose outcome is unknown: the same body with the same Request-id.
    /// `transfer.already.done` is then a confirmation, read through status by requestId.
    Resend {
        /// The same request body as the earlier send.
        #[arg(long, value_name = "FILE")]
        body: PathBuf,
        /// The Request-id the earlier send was given.
        #[arg(long, value_name = "N", allow_negative_numbers = true)]
        request_id: i64,
        /// As on `send`: follow a Pending or unknown outcome up for up to SECS, recorded.
        #[arg(long, value_name = "SECS")]
        wait: Option<u64>,
    },
    /// Read a transfer's status (authoritative), by one identifier or several at once (all
    /// sent together; a reply naming another transfer than one of them is an error, exit 4).
    #[command(group(clap::ArgGroup::new("which").required(true).multiple(true)))]
    Status {
        /// By the transfer id.
        #[arg(long, value_name = "ID", group = "which")]
        transfer_id: Option<String>,
        /// By the LTN number.
        #[arg(long, value_name = "N", group = "which")]
        ltn: Option<String>,
        /// By the Request-id of the send.
        #[arg(long, value_name = "N", group = "which", allow_negative_numbers = true)]
        request_id: Option<i64>,
    },
    /// Cancel a cash-collection transfer not yet collected.
    Cancel {
        /// The LTN number of the transfer.
        #[arg(long, value_name = "N")]
        ltn: String,
        /// Why (kept in the account's audit log only).
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
    },
    /// Check a collection callback as the receiver would, to debug one: its headers and body
    /// parsed, its timestamp against the window, and (with `--sandbox-key`) its signature under
    /// the sandbox's scheme. The service's own scheme is not documented: without a key the
    /// signature is only decoded. Sends nothing; needs no settings. Exit 0 when a receiver
    /// would record it, 1 when it would refuse it (the reason printed), 2 for bad usage.
    CheckCallback {
        /// The body exactly as posted (a file; `-` reads stdin).
        #[arg(long, value_name = "FILE")]
        body: PathBuf,
        /// The `timestamp` header value (epoch milliseconds).
        #[arg(long, value_name = "MS", allow_negative_numbers = true)]
        timestamp: String,
        /// The `signature` header value (base64).
        #[arg(long, value_name = "BASE64", allow_hyphen_values = true)]
        signature: String,
        /// The window the timestamp must fall in, in seconds either side of now (the
        /// receiver's default: 3600).
        #[arg(long, value_name = "SECS", default_value_t = 3600)]
        window: u64,
        /// The key the built-in sandbox signs with (`whish sandbox serve` prints it): verify
        /// the signature under the sandbox's HMAC-SHA256 scheme.
        /// Given explicitly only: a shell set up for the sandbox exports that variable, and a
        /// production callback checked with it would read as rejected.
        #[arg(long, value_name = "KEY")]
        sandbox_key: Option<String>,
    },
    /// The sending countries of the account.
    Countries,
    /// The payment modes.
    Modes,
    /// The activity event log.
    Activity(Report),
    /// The statement per currency.
    Statement {
        #[command(flatten)]
        report: Report,
        /// Check that every line keeps balance = previous + debit - credit.
        #[arg(long)]
        verify: bool,
    },
}

#[derive(Debug, Args)]
pub struct Report {
    /// From this time, `yyyy-MM-dd HH:mm:ss`.
    #[arg(long, value_name = "DATE")]
    pub from: String,
    /// To this time, `yyyy-MM-dd HH:mm:ss`.
    #[arg(long, value_name = "DATE")]
    pub to: String,
    /// Only this currency (both when absent).
    #[arg(long, value_enum)]
    pub currency: Option<Cur>,
}

/// The batch a payouts command works on: its file, its name and its defaults.
#[derive(Debug, Args)]
pub struct BatchArgs {
    /// The batch file: CSV with a header (`.csv`) or JSON lines (`.jsonl`); see `whish payouts
    /// columns`.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The batch's name, required: part of every row's Request-id, so the same rows under the
    /// same name are the same payments, and two files under one name are one batch (December's
    /// payroll.csv under November's name would be reported paid, and not be). Name each batch
    /// once, for good: `aid-2026-11-24`.
    #[arg(long, value_name = "NAME")]
    pub batch: String,
    /// The sending country of rows without `from_country`.
    #[arg(long, value_name = "ID", allow_negative_numbers = true)]
    pub from_country: Option<i64>,
    /// The sender of rows without sender columns: first name.
    #[arg(long, value_name = "NAME", requires_all = ["sender_last_name", "sender_phone"])]
    pub sender_first_name: Option<String>,
    /// The default sender's last name.
    #[arg(long, value_name = "NAME")]
    pub sender_last_name: Option<String>,
    /// The default sender's phone.
    #[arg(long, value_name = "PHONE")]
    pub sender_phone: Option<String>,
    /// The default sender's date of birth, dd-MM-yyyy (optional).
    #[arg(long, value_name = "DATE")]
    pub sender_date_of_birth: Option<String>,
    /// The address the service calls when a cash-collection row is collected.
    #[arg(long, value_name = "URL")]
    pub callback_url: Option<String>,
    /// Let rows without a `reference` be known by their line. Without it such a row is a bad
    /// row: a line added above it, or the file saved as JSON lines, would pay it again.
    #[arg(long)]
    pub key_by_line: bool,
    /// Pay rows the journal already holds as sent under another Request-id (the same payment
    /// in another batch). Without it such a row is a bad row: a batch name mistyped on a second
    /// run would pay every row again.
    #[arg(long)]
    pub allow_repeat: bool,
}

#[derive(Debug, Subcommand)]
pub enum PayoutsCmd {
    /// Check every row of a batch file and send nothing: each bad row with its line and column.
    Check {
        #[command(flatten)]
        batch: BatchArgs,
    },
    /// Send a batch: checked whole first, each row journaled before it is sent under a
    /// Request-id derived from the batch and the row. Run it again after a crash, a Ctrl-C or
    /// an account refusal: no row is paid twice.
    ///
    /// Exit status: 0 every row accepted, 1 some row refused (none open), 2 bad rows or usage
    /// (nothing sent), 3 some row pending or unknown (run it again later), 5 stopped before the
    /// end (an account refusal or Ctrl-C: run it again).
    Send {
        #[command(flatten)]
        batch: BatchArgs,
        /// The results file, one line per row as it finishes: `.csv` or `.jsonl` (default:
        /// FILE's name with `.results.csv`).
        #[arg(long, value_name = "FILE")]
        results: Option<PathBuf>,
        /// At most this many rows in flight.
        #[arg(long, value_name = "N", default_value_t = 8)]
        concurrency: usize,
        /// At most this many rows started a second.
        #[arg(long, value_name = "N")]
        rate: Option<f64>,
        /// Send the good rows even when some are bad (the bad ones are reported, not sent).
        #[arg(long)]
        skip_bad_rows: bool,
        /// Go on after an account-level refusal (balance, daily limit) instead of stopping.
        #[arg(long)]
        no_stop_on_account_refusal: bool,
    },
    /// Where each row's money is: collected, waiting, cancelled, credited, not paid (status
    /// reads by Request-id). Sends nothing.
    FollowUp {
        #[command(flatten)]
        batch: BatchArgs,
        /// Write every row's follow-up here: `.csv` or `.jsonl` (default: FILE's name with
        /// `.follow-up.csv`).
        #[arg(long, value_name = "FILE")]
        results: Option<PathBuf>,
    },
    /// Cancel the rows still uncollected that were sent before a time, each cancel journaled
    /// under its own derived Request-id.
    Cancel {
        #[command(flatten)]
        batch: BatchArgs,
        /// Cancel what was sent before this time (UTC), `yyyy-MM-dd HH:mm:ss`.
        #[arg(long, value_name = "DATE")]
        uncollected_before: String,
        /// Why (kept in the account's audit log).
        #[arg(long, value_name = "TEXT", default_value = "not collected in time")]
        reason: String,
        /// Write every row's follow-up here (default: FILE's name with `.cancel.csv`).
        #[arg(long, value_name = "FILE")]
        results: Option<PathBuf>,
    },
    /// The columns of a batch file.
    Columns,
}

#[derive(Debug, Subcommand)]
pub enum ReconcileCmd {
    /// The transfer service: the journal's sends against the activity log and the statement,
    /// joined by Request-id, per currency. Exit 0 when everything matches, 6 when something
    /// does not.
    Transfer {
        /// From this time, `yyyy-MM-dd HH:mm:ss` (the service's time; the journal's is read as UTC).
        #[arg(long, value_name = "DATE")]
        from: String,
        /// To this time, `yyyy-MM-dd HH:mm:ss`.
        #[arg(long, value_name = "DATE")]
        to: String,
        /// Also write the findings and the totals as CSV to this file.
        #[arg(long, value_name = "FILE")]
        csv: Option<PathBuf>,
    },
    /// The hosted-collect service: each payment the journal created in the range, its status
    /// read from the service, against the journal's refunds; and, for refunds, the payments
    /// created in the days before it. Exit 0 when everything matches, 6 when something does not.
    Collect {
        /// From this time (UTC), `yyyy-MM-dd HH:mm:ss`.
        #[arg(long, value_name = "DATE")]
        from: String,
        /// To this time (UTC), `yyyy-MM-dd HH:mm:ss`.
        #[arg(long, value_name = "DATE")]
        to: String,
        /// Read the status of the payments created this many days before `--from` too, for a
        /// refund made outside the journal (the service keeps no log of refunds).
        #[arg(long, value_name = "DAYS", default_value_t = 7)]
        look_back_days: u16,
    },
}

#[derive(Debug, Subcommand)]
pub enum LocationsCmd {
    /// Governorates with their districts.
    Governorates,
    /// Shops, optionally narrowed.
    Shops {
        /// Only the shops of this governorate.
        #[arg(long, value_name = "N", allow_negative_numbers = true)]
        governorate_id: Option<i64>,
        /// Only the shops of this district.
        #[arg(long, value_name = "N", allow_negative_numbers = true)]
        district_id: Option<i64>,
    },
}

#[derive(Debug, Subcommand)]
pub enum JournalCmd {
    /// The entries, newest first: key, service, operation, state, created (one JSON line each,
    /// or a table with `--output table`).
    List {
        /// Only the entries still open or waiting for an operator.
        #[arg(long)]
        open: bool,
        /// Only the entries in this state (intended, may-have-arrived, pending, accepted,
        /// refused, needs-operator).
        #[arg(long, value_name = "STATE")]
        state: Option<String>,
        /// Only the entries recorded at or after this time: `yyyy-MM-dd`, `yyyy-MM-dd HH:mm:ss`
        /// (UTC) or RFC 3339.
        #[arg(long, value_name = "TIME")]
        since: Option<String>,
        /// At most this many (the newest).
        #[arg(long, default_value_t = 1000)]
        limit: u32,
    },
    /// The entries with this idempotency key (a Request-id or an externalId), with their
    /// request bodies.
    Show { key: String },
    /// Close an entry waiting for the operator that you decided not to send, once the service
    /// shows it never took effect (a send: no transfer under its Request-id; a cancel: the
    /// transfer is not cancelled). Sends nothing. Exit 0 when closed, 1 when the service
    /// received it (left as it was), 2 when the entry is not waiting for the operator or the
    /// check cannot be made, 3 when another process holds the entry now (try again), 4 when
    /// the service could not be read.
    Abandon {
        /// The entry's key (a Request-id).
        key: String,
        /// Why (recorded in the entry's message).
        #[arg(long, value_name = "TEXT")]
        reason: String,
        /// Take an entry written before 0.4 (it records no service) as the one these settings
        /// name: your word that this journal held this environment's entries only.
        #[arg(long)]
        adopt_untargeted: bool,
    },
    /// The callback receiver's inbox: the changes not yet handed on, newest first (key,
    /// state `waiting` or `escalated` (waiting for a person), attempts, last error, recorded).
    Inbox {
        /// At most this many of each state.
        #[arg(long, default_value_t = 1000)]
        limit: u32,
    },
    /// On your word, hand an inbox change on again now (one that waits for a person, or
    /// waits for its next try): a running receiver's next worker takes it. Exit 0 when it was
    /// put back, 2 when no change has this key or it was already handed on, 3 when a worker
    /// holds it at this moment (try again).
    HandOn {
        /// The change's key, as `journal inbox` lists it.
        key: String,
    },
    /// Drive every open entry to a final state with its own key (or only the entries of the
    /// keys named). Exit 0 when every entry (every named one) is final, 3 when some are still
    /// pending or need the operator, 4 when a service could not be reached.
    Recover {
        /// Settle only the entries with these keys (Request-ids or externalIds), leaving every
        /// other entry as it is: with --retry-needs-operator, the one entry you decided to
        /// settle now. A key with no entry is an error, and nothing is sent.
        #[arg(value_name = "KEY", conflicts_with = "take_over")]
        keys: Vec<String>,
        /// Move an entry still open this many hours after it was recorded to needs-operator.
        #[arg(long, default_value_t = 24.0, value_name = "HOURS")]
        deadline_hours: f64,
        /// Also take the entries another process holds (a live one renews its 30 s lease; one
        /// of this host that is gone is taken anyway): only when that process is known to be
        /// dead, such as a process on another host that was killed.
        #[arg(long)]
        take_over: bool,
        /// Also settle the entries waiting for the operator (needs-operator) recorded within
        /// --deadline-hours: your decision that they should be settled now (a batch resumed
        /// after a weekend). A transfer is read by status first and sent again, with its own
        /// Request-id, only when the service never received it.
        #[arg(long)]
        retry_needs_operator: bool,
        /// Take the entries written before 0.4 (they record no service) as the ones these
        /// settings name: your word that this journal held this environment's entries only.
        /// Without it they are left open and listed as another service's (exit 3).
        #[arg(long)]
        adopt_untargeted: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum CollectCmd {
    /// The merchant balance in one currency.
    Balance {
        /// The currency of the balance.
        #[arg(long, value_enum)]
        currency: Cur,
    },
    /// Create a payment; prints the hosted page address (not a payment).
    Create {
        /// The amount, plain decimal text (`12.50`).
        #[arg(long, value_name = "A", allow_hyphen_values = true)]
        amount: String,
        /// The currency.
        #[arg(long, value_enum)]
        currency: Cur,
        /// Your reference for the payment (default: a new one, printed); the idempotency key.
        #[arg(long, value_name = "X")]
        external_id: Option<String>,
        /// Called (GET) when the payment succeeds; a public address.
        #[arg(long, value_name = "U")]
        success_callback_url: String,
        /// Called (GET) when an attempt fails; a public address.
        #[arg(long, value_name = "U")]
        failure_callback_url: String,
        /// Where the payer's browser goes after paying.
        #[arg(long, value_name = "U")]
        success_redirect_url: String,
        /// Where the payer's browser goes after a failed attempt.
        #[arg(long, value_name = "U")]
        failure_redirect_url: String,
        /// The text shown on the hosted page.
        #[arg(long, value_name = "TEXT")]
        invoice: Option<String>,
    },
    /// A payment's collectStatus (confirm before fulfilling).
    Status {
        /// The payment's currency.
        #[arg(long, value_enum)]
        currency: Cur,
        /// The payment's externalId.
        #[arg(long, value_name = "X")]
        external_id: String,
    },
    /// Refund a successful payment.
    Refund {
        /// The payment's currency.
        #[arg(long, value_enum)]
        currency: Cur,
        /// The externalId of the payment to refund.
        #[arg(long, value_name = "X")]
        external_id: String,
        /// Why (refundReason).
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum TopupCmd {
    /// The session's balance and void balance.
    Balance,
    /// The options a provider offers for a target.
    Options {
        /// The provider's id (`etisalat-ae`, ...).
        #[arg(long, value_name = "P")]
        provider: String,
        /// The number (or address) to top up.
        #[arg(long, value_name = "T")]
        target: String,
    },
    /// Fetch the options and pay the named one with its exact amount.
    Pay {
        /// The provider's id (`etisalat-ae`, ...).
        #[arg(long, value_name = "P")]
        provider: String,
        /// The number (or address) to top up.
        #[arg(long, value_name = "T")]
        target: String,
        /// The option to pay, as `topup options` lists it.
        #[arg(long, value_name = "ID")]
        option_id: String,
        /// Pay to this target instead of `--target` (the one the options were fetched for):
        /// only when the operator instructs it.
        #[arg(long, value_name = "T")]
        pay_target: Option<String>,
        /// Your reference for the sale (default: a new one, printed); the idempotency key.
        #[arg(long, value_name = "X")]
        external_id: Option<String>,
        /// Print the sold items' PINs (hidden by default).
        #[arg(long)]
        show_pin: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum SandboxCmd {
    /// Run the sandbox and print its settings as `export` lines.
    Serve(ServeArgs),
}

/// `whish sandbox serve`: the sandbox's own options, and the credentials it issues.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The port (0: any free one).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub port: u16,
    /// The address to listen on (default loopback). The control API has no credentials: bind
    /// elsewhere only on a network you trust, such as a container's.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1")]
    pub bind: std::net::IpAddr,
    /// Accept loopback or non-public collect callback and redirect addresses (the real service
    /// answers HTTP 403 for them, and so does the sandbox by default), deliver transfer
    /// callbacks to them, and keep the other leniencies of docs/sandbox.md for clients written
    /// against older revisions.
    #[arg(long)]
    pub lenient: bool,
    /// The key the sandbox signs transfer callbacks with (printed as WHISH_SANDBOX_CALLBACK_KEY).
    #[arg(long, value_name = "KEY")]
    pub callback_key: Option<String>,
    /// The transfer username the sandbox issues (and accepts).
    #[arg(long, value_name = "NAME")]
    pub transfer_username: Option<String>,
    /// The transfer key the sandbox issues.
    #[arg(long, value_name = "KEY")]
    pub transfer_key: Option<String>,
    /// The collect channel the sandbox issues.
    #[arg(long, value_name = "CHANNEL")]
    pub collect_channel: Option<String>,
    /// The collect secret the sandbox issues.
    #[arg(long, value_name = "SECRET")]
    pub collect_secret: Option<String>,
    /// The collect websiteUrl the sandbox issues.
    #[arg(long, value_name = "SITE")]
    pub collect_website_url: Option<String>,
    /// The top-up sessionId the sandbox issues.
    #[arg(long, value_name = "ID")]
    pub topup_session_id: Option<String>,
    /// The top-up token the sandbox issues.
    #[arg(long, value_name = "TOKEN")]
    pub topup_token: Option<String>,
}
