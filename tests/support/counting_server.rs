//! A TCP server on 127.0.0.1 that counts every connection it accepts, so
//! "nothing reached it" is a number; each connection is handed to the
//! test's own `answer` on a thread of its own.

use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub(crate) struct CountingServer {
    pub port: u16,
    hits: Arc<AtomicUsize>,
}

impl CountingServer {
    pub(crate) fn start(answer: impl Fn(TcpStream) + Send + Sync + 'static) -> CountingServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&hits);
        let answer = Arc::new(answer);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                counter.fetch_add(1, Ordering::SeqCst);
                let answer = Arc::clone(&answer);
                std::thread::spawn(move || answer(stream));
            }
        });
        CountingServer { port, hits }
    }

    /// The connections accepted so far.
    pub(crate) fn hits(&self) -> usize {
        // Let a connection that is on its way be counted.
        std::thread::sleep(Duration::from_millis(100));
        self.hits.load(Ordering::SeqCst)
    }
}
