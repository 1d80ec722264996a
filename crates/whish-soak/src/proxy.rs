//! Two TCP proxies of the callbacks soak: the front that spreads the service's deliveries over
//! the receiver processes (a killed one is skipped), and the cut in front of PostgreSQL that
//! makes the database unreachable for a while (every connection closed, new ones refused).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// A proxy to the receivers' ports: each connection goes to the next one that accepts it.
pub async fn front(backends: Vec<SocketAddr>) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let next = Arc::new(AtomicUsize::new(0));
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            let (backends, next) = (backends.clone(), next.clone());
            tokio::spawn(async move {
                for _ in 0..backends.len() {
                    let i = next.fetch_add(1, Ordering::Relaxed) % backends.len();
                    if let Ok(mut upstream) = TcpStream::connect(backends[i]).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
                        return;
                    }
                }
                // No receiver is up: the connection closes, and the service delivers again.
            });
        }
    });
    Ok(addr)
}

/// A proxy to `upstream` that can be cut: while cut, every connection through it is closed and
/// new ones are closed at once.
pub struct Cut {
    pub addr: SocketAddr,
    cut: Arc<AtomicBool>,
    epoch: watch::Sender<u64>,
}

impl Cut {
    pub async fn start(upstream: SocketAddr) -> std::io::Result<Cut> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let cut = Arc::new(AtomicBool::new(false));
        let (epoch, _) = watch::channel(0u64);
        let (is_cut, epochs) = (cut.clone(), epoch.clone());
        tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                if is_cut.load(Ordering::SeqCst) {
                    continue; // dropped: closed at once
                }
                let mut changed = epochs.subscribe();
                tokio::spawn(async move {
                    let Ok(mut upstream) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut upstream) => {}
                        _ = changed.changed() => {}
                    }
                });
            }
        });
        Ok(Cut { addr, cut, epoch })
    }

    /// Cut every connection, and refuse new ones until [`restore`](Self::restore).
    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        self.epoch.send_modify(|e| *e += 1);
    }

    pub fn restore(&self) {
        self.cut.store(false, Ordering::SeqCst);
    }
}
