//! Network by host name: 100 MiB through the proxy's CONNECT tunnel over
//! loopback against the same 100 MiB sent directly (target ≥ 0.9×), by
//! the same client to the same server, and their ratio taken back to back.
//! Both connections are made once, before any timing, and stay open: each
//! iteration times the bytes only (the sink answers one byte per 100 MiB),
//! not the connect, the `CONNECT` exchange or TCP's slow start. Start-up
//! with `network.hosts` is in `benches/run.rs`.

use criterion::{criterion_group, Criterion, Throughput};
use magus_sandbox::__private::enforce::proxy::Proxy;
use magus_sandbox::__private::policy::{HostList, HostRule};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const TRANSFER: usize = 100 << 20;
const CHUNK: usize = 1 << 20;

/// Started before criterion makes any thread: the proxy is forked.
static PROXY: OnceLock<Proxy> = OnceLock::new();

/// A server that, on each connection, reads blocks of [`TRANSFER`] bytes
/// and answers each with one byte, until the client closes.
fn sink() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("sink");
    let port = listener.local_addr().expect("sink port").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || serve_blocks(stream));
        }
    });
    port
}

fn serve_blocks(mut stream: TcpStream) {
    let mut buf = vec![0u8; CHUNK];
    let mut got = 0;
    while let Ok(n) = stream.read(&mut buf) {
        if n == 0 {
            return;
        }
        got += n;
        assert!(got <= TRANSFER, "the client sent past a block");
        if got == TRANSFER {
            got = 0;
            stream.write_all(b"k").expect("answer");
        }
    }
}

/// One block of [`TRANSFER`] bytes, until the sink has read all of it.
fn send_block(stream: &mut TcpStream, chunk: &[u8]) {
    for _ in 0..TRANSFER / CHUNK {
        stream.write_all(chunk).expect("send");
    }
    let mut answer = [0u8; 1];
    stream.read_exact(&mut answer).expect("the sink's answer");
}

fn tunnel(proxy_port: u16, target: u16) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", proxy_port)).expect("proxy");
    write!(
        s,
        "CONNECT localhost:{target} HTTP/1.1\r\nHost: localhost\r\n\r\n"
    )
    .expect("connect");
    let mut reply = [0u8; 39];
    s.read_exact(&mut reply).expect("reply");
    assert!(
        reply.starts_with(b"HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(&reply)
    );
    s
}

/// Times `iters` blocks on `stream`.
fn timed(stream: &mut TcpStream, chunk: &[u8], iters: u64) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        send_block(stream, chunk);
    }
    start.elapsed()
}

fn bench_transfer(c: &mut Criterion) {
    let proxy = PROXY.get().expect("proxy started");
    let port = sink();
    let chunk = vec![0x5au8; CHUNK];
    let mut direct = TcpStream::connect(("127.0.0.1", port)).expect("direct");
    let mut proxied = tunnel(proxy.http_port(), port);
    let mut group = c.benchmark_group("transfer_100MiB");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(TRANSFER as u64));
    group.bench_function("direct", |b| {
        b.iter_custom(|iters| timed(&mut direct, &chunk, iters))
    });
    group.bench_function("through_proxy", |b| {
        b.iter_custom(|iters| timed(&mut proxied, &chunk, iters))
    });
    // On a shared machine the load moves between the two functions above;
    // this one times a direct and a proxied block back to back, each
    // iteration, and reports their ratio as its "time": 1 s means equal,
    // 1.11 s is the ≥ 0.9× target.
    group.bench_function("ratio_proxied_over_direct_in_s", |b| {
        b.iter_custom(|iters| {
            let mut ratio = 0.0;
            for _ in 0..iters {
                let d = timed(&mut direct, &chunk, 1);
                let p = timed(&mut proxied, &chunk, 1);
                ratio += p.as_secs_f64() / d.as_secs_f64();
            }
            Duration::from_secs_f64(ratio)
        })
    });
    group.finish();
}

criterion_group!(benches, bench_transfer);

fn main() {
    let hosts = HostList {
        rules: vec![HostRule::parse("localhost").expect("rule")],
    };
    let mut proxy = Proxy::start(&hosts).expect("the proxy starts");
    proxy.listen().expect("the proxy listens");
    let _ = PROXY.set(proxy);
    benches();
    Criterion::default().configure_from_args().final_summary();
}
