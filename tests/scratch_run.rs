#[test]
fn scratch() {
    let Ok(files) = std::env::var("BUZZ_FILES") else { return };
    for f in files.split_whitespace() {
        let f = std::path::PathBuf::from(f);
        let args: Vec<String> = std::fs::read_to_string(f.with_extension("args")).map(|a| a.lines().map(String::from).collect()).unwrap_or_default();
        let h = std::thread::Builder::new().stack_size(8 << 20).spawn(move || {
            let src = std::fs::read_to_string(&f).unwrap();
            println!("===== {}", f.display());
            let r = magus_sandbox::buzz::run_spell(&f, &src, args, vec![]);
            match r { Ok(s) => println!("[status {s}]"), Err(e) => println!("[ERR {e}]") }
        }).unwrap();
        h.join().unwrap();
    }
}
