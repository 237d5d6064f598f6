//! Every malformed `magus.yaml` under `tests/config_corpus/` is rejected with
//! the expected message at the expected line and column.
//!
//! `NAME.expected` holds `line:column` on its first line and a fragment of
//! the message on its second. `MAGUS_BLESS_CORPUS=1` writes missing
//! `.expected` files from the current output (review them before committing).

use crate::diag::{render, MessageFormat};
use crate::policy::config::{load_config, ConfigError};
use std::path::{Path, PathBuf};

fn corpus() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/config_corpus");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

fn message(err: &ConfigError) -> String {
    err.kind.to_string()
}

fn bless(expected: &Path, err: &ConfigError) {
    let text = format!("{}:{}\n{}\n", err.line, err.column, message(err));
    std::fs::write(expected, text).unwrap();
}

#[test]
fn every_malformed_config_is_rejected_where_it_is_wrong() {
    let files = corpus();
    assert!(files.len() >= 20, "only {} corpus files", files.len());
    let blessing = std::env::var_os("MAGUS_BLESS_CORPUS").is_some();
    for file in files {
        let err = match load_config(&file) {
            Ok(config) => panic!("{} was accepted: {config:?}", file.display()),
            Err(err) => err,
        };
        let expected = file.with_extension("expected");
        if blessing && !expected.exists() {
            bless(&expected, &err);
        }
        let want = std::fs::read_to_string(&expected)
            .unwrap_or_else(|_| panic!("missing {}", expected.display()));
        let mut lines = want.lines();
        let position = lines.next().unwrap();
        let fragment = lines.next().unwrap();
        let name = file.file_name().unwrap().to_string_lossy();
        assert_eq!(
            format!("{}:{}", err.line, err.column),
            position,
            "{name}: {err}"
        );
        assert!(
            message(&err).contains(fragment),
            "{name}: `{}` lacks `{fragment}`",
            message(&err)
        );
        assert!(!err.hint().is_empty(), "{name}: no hint");
        assert_eq!(err.file, file, "{name}: wrong file");
    }
}

#[test]
fn config_errors_render_with_file_line_column_and_hint() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/config_corpus/bad_mode.yaml");
    let err = load_config(&file).unwrap_err();
    let text = render(&err.to_diagnostic(), MessageFormat::Human);
    assert!(
        text.starts_with("error[MGS3006]: invalid magus.yaml: invalid mode `rx`"),
        "{text}"
    );
    assert!(text.contains("bad_mode.yaml:4:13\n"), "{text}");
    assert!(text.contains("4 |       mode: rx\n"), "{text}");
    assert!(text.contains("= help: `mode` is `ro`"), "{text}");
    let json = render(&err.to_diagnostic(), MessageFormat::Json);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["config"]["line"], 4);
    assert_eq!(value["config"]["column"], 13);
    assert_eq!(value["severity"], "error");
}
