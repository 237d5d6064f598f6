//! Replays the proxy fuzz corpus (`fuzz/corpus/proxy/`) through the same
//! check the `proxy` fuzz target runs: the proxy's HTTP and SOCKS5
//! request readers must give a target or a refusal, never panic, and
//! forward a head that names the checked host.

#[path = "../../fuzz/cases/proxy_case.rs"]
mod proxy_case;

use std::path::Path;

#[test]
fn every_proxy_corpus_file_parses_or_is_refused_consistently() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/proxy");
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let result = std::panic::catch_unwind(|| proxy_case::check(&bytes));
        match result {
            Ok(Ok(())) => {}
            Ok(Err(why)) => panic!("{}: {why}", path.display()),
            Err(_) => panic!("the proxy's parsing panicked on {}", path.display()),
        }
        count += 1;
    }
    assert!(count >= 15, "corpus has only {count} files");
}
