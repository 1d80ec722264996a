//! A TCP relay in front of a server, whose behaviour a test changes while its address stays:
//! the same base URL throughout, as a journal that records each request's service requires.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, TcpStream};

/// What the relay does with a new connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelayMode {
    /// Accept it and never read nor answer: a request recorded and then stuck before it left
    /// this host's side (the process is killed meanwhile).
    Hole,
    /// Pass it on to the upstream server, both ways.
    Forward,
}

/// A loopback TCP relay to an upstream server (see the module).
#[derive(Debug, Clone)]
pub struct Relay {
    addr: SocketAddr,
    mode: Arc<Mutex<RelayMode>>,
}

impl Relay {
    /// A relay on a free loopback port to `upstream`, starting in `mode`. It runs on the
    /// current tokio runtime until that runtime ends.
    ///
    /// # Panics
    /// When no loopback port can be bound.
    pub async fn start(upstream: SocketAddr, mode: RelayMode) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a relay");
        let addr = listener.local_addr().expect("the relay's address");
        let mode = Arc::new(Mutex::new(mode));
        let shared = Arc::clone(&mode);
        tokio::spawn(async move {
            let mut holes = Vec::new();
            while let Ok((mut client, _)) = listener.accept().await {
                let now = *shared.lock().expect("relay mode");
                match now {
                    RelayMode::Hole => holes.push(client),
                    RelayMode::Forward => {
                        tokio::spawn(async move {
                            if let Ok(mut server) = TcpStream::connect(upstream).await {
                                let _ =
                                    tokio::io::copy_bidirectional(&mut client, &mut server).await;
                            }
                        });
                    }
                }
            }
        });
        Relay { addr, mode }
    }

    /// The relay's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// What it does with the connections that come next (those held already stay held).
    ///
    /// # Panics
    /// When another thread panicked while setting it.
    pub fn set(&self, mode: RelayMode) {
        *self.mode.lock().expect("relay mode") = mode;
    }
}
