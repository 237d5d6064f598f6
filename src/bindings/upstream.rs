//! Upstream Buzz's host libraries as a second face over the same gate:
//! `buzz:fs`, `buzz:os` and `buzz:io` with upstream's names and signatures.
//! Every call that touches the filesystem or starts a program goes through
//! the session's gate exactly as `fs.*` and `sh.*` do, so a denial is the
//! same `SandboxError` with the same MGS code. `buzz:io`'s `File` object is
//! Buzz source ([`IO_LIBRARY`]) over the `ioraw` natives below.

use super::errors::FILE_SYSTEM_ERROR;
use super::fs::bind;
use super::Session;
use crate::buzz::{NativeCall, NativeModule, Raise, Value};
use crate::enforce::gate::WriteMode;
use std::cell::RefCell;
use std::collections::HashMap;
use std::io::{BufRead, Read, Write};
use std::rc::Rc;

/// Deepest directory tree `fs\deleteDirectory` walks.
const MAX_DELETE_DEPTH: usize = 64;

/// `buzz:io`, written in Buzz over the `ioraw` natives.
pub(super) const IO_LIBRARY: &str = include_str!("io.buzz");

/// `buzz:test` (upstream's `Tester`), written in Buzz over `buzz:io` and
/// `buzz:os`: it reaches nothing they do not.
pub(super) const TEST_LIBRARY: &str = include_str!("test.buzz");

/// `buzz:fs` bound to `session`.
pub(super) fn fs_module(session: &Rc<Session>) -> NativeModule {
    let m = NativeModule::new("buzz:fs");
    let m = bind(m, session, "currentDirectory", |s, _| {
        Ok(Value::str(
            s.gate().current_directory().to_string_lossy().as_ref(),
        ))
    });
    let m = bind(m, session, "makeDirectory", |s, call| {
        let path = call.arg_str(0)?;
        s.check(s.gate().make_directory(path))?;
        s.wrote(path);
        Ok(Value::Null)
    });
    let m = bind(m, session, "deleteFile", |s, call| {
        let path = call.arg_str(0)?;
        if s.gate().list(path).is_ok() {
            return Err(fs_error(format!("fs.deleteFile: `{path}` is a directory")));
        }
        s.check(s.gate().delete(path))?;
        Ok(Value::Null)
    });
    let m = bind(m, session, "deleteDirectory", |s, call| {
        delete_tree(s, call.arg_str(0)?, 0)?;
        Ok(Value::Null)
    });
    let m = bind(m, session, "move", |s, call| {
        let (from, to) = (call.arg_str(0)?, call.arg_str(1)?);
        s.check(s.gate().rename(from, to))?;
        s.wrote(to);
        Ok(Value::Null)
    });
    let m = bind(m, session, "list", |s, call| {
        let names = s.check(s.gate().list(call.arg_str(0)?))?;
        Ok(Value::list(names.into_iter().map(Value::str).collect()))
    });
    bind(m, session, "exists", |s, call| {
        Ok(Value::bool(s.check(s.gate().exists(call.arg_str(0)?))?))
    })
}

/// Removes `path` and everything under it, each removal through the gate.
fn delete_tree(s: &Session, path: &str, depth: usize) -> Result<(), Raise> {
    if depth > MAX_DELETE_DEPTH {
        return Err(fs_error(format!(
            "fs.deleteDirectory: `{path}` is nested too deeply"
        )));
    }
    let names = s.check(s.gate().list(path))?;
    for name in names {
        let child = format!("{}/{name}", path.trim_end_matches('/'));
        if s.gate().list(&child).is_ok() {
            delete_tree(s, &child, depth + 1)?;
        } else {
            s.check(s.gate().delete(&child))?;
        }
    }
    s.check(s.gate().delete(path))
}

fn fs_error(message: String) -> Raise {
    Raise::new(Value::record(
        FILE_SYSTEM_ERROR,
        vec![("message", Value::str(message))],
    ))
}

/// `buzz:os` bound to `session`: the environment is the scrubbed child
/// environment and `execute` is `sh.run`.
pub(super) fn os_module(session: &Rc<Session>) -> NativeModule {
    let m = NativeModule::new("buzz:os");
    let m = bind(m, session, "env", |s, call| {
        // As upstream: an empty name is no variable, whatever the
        // environment holds.
        let name = call.arg_str(0)?;
        let value = s.env_get(name).filter(|_| !name.is_empty());
        Ok(Value::optional(value.map(Value::str)))
    });
    let m = bind(m, session, "execute", |s, call| {
        Ok(Value::Int(
            s.run_relayed(&call.arg_str_list(0)?, call.site)?.into(),
        ))
    });
    let m = bind(m, session, "tmpDir", |s, _| {
        Ok(Value::str(
            s.env_get("TMPDIR").unwrap_or_else(|| "/tmp".into()),
        ))
    });
    m.function("time", |_| Ok(Value::double(now_ms())))
        .function("sleep", |call| {
            let ms = call.arg_double(0)?.clamp(0.0, 86_400_000.0);
            std::thread::sleep(std::time::Duration::from_secs_f64(ms / 1000.0));
            Ok(Value::Null)
        })
        .function("tmpFilename", |call| {
            let prefix = call.opt_arg(0).and_then(Value::as_str).unwrap_or("");
            Ok(Value::str(format!(
                "{prefix}{}",
                std::process::id() as f64 + now_ms()
            )))
        })
        .function("exit", |call| {
            let status = call.arg_int(0)?;
            call.exit(i32::try_from(status).unwrap_or(1));
            Ok(Value::Null)
        })
}

fn now_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// An open `io.File`: what it reads from and where writes go.
enum Handle {
    /// A file's content, read through the gate when it was opened.
    Reading {
        data: Vec<u8>,
        at: usize,
    },
    /// Writes append to this spelled path through the gate.
    Writing {
        path: String,
    },
    Stdin,
    Stdout,
    Stderr,
}

type Handles = Rc<RefCell<HashMap<i64, Handle>>>;

/// The natives under `buzz:io`'s `File`: handles 0, 1, 2 are the standard
/// streams; others are files opened through the gate.
pub(super) fn io_natives(session: &Rc<Session>) -> NativeModule {
    let handles: Handles = Rc::new(RefCell::new(HashMap::from([
        (0, Handle::Stdin),
        (1, Handle::Stdout),
        (2, Handle::Stderr),
    ])));
    let next = Rc::new(RefCell::new(3i64));
    let opened = handles.clone();
    let m = bind(
        NativeModule::new("ioraw"),
        session,
        "open",
        move |s, call| {
            let (path, mode) = (call.arg_str(0)?, call.arg_int(1)?);
            let handle = match mode {
                0 => Handle::Reading {
                    data: s.check(s.gate().read(path))?,
                    at: 0,
                },
                1 => {
                    s.check(s.gate().write(path, b"", WriteMode::Truncate))?;
                    s.wrote(path);
                    Handle::Writing { path: path.into() }
                }
                _ => {
                    s.check(s.gate().write(path, b"", WriteMode::Append))?;
                    s.wrote(path);
                    Handle::Writing { path: path.into() }
                }
            };
            let id = *next.borrow();
            *next.borrow_mut() += 1;
            opened.borrow_mut().insert(id, handle);
            Ok(Value::Int(id))
        },
    );
    let writer = handles.clone();
    let m = bind(m, session, "write", move |s, call| {
        let (id, bytes) = (call.arg_int(0)?, call.arg_str(1)?);
        write(s, &writer, id, bytes, call)
    });
    let (reader, closer) = (handles.clone(), handles);
    m.function("read", move |call| read(&reader, call))
        .function("close", move |call| {
            let id = call.arg_int(0)?;
            if id > 2 {
                closer.borrow_mut().remove(&id);
            }
            Ok(Value::Null)
        })
        .function("runFile", |_| {
            Err(Raise::type_error(
                "io\\runFile is not available in magus: a spell cannot load and run another script",
            ))
        })
        .function("isTTY", |call| {
            use std::io::IsTerminal;
            Ok(Value::bool(match call.arg_int(0)? {
                0 => std::io::stdin().is_terminal(),
                1 => std::io::stdout().is_terminal(),
                2 => std::io::stderr().is_terminal(),
                _ => false,
            }))
        })
}

fn write(
    s: &Session,
    handles: &Handles,
    id: i64,
    bytes: &str,
    call: &mut NativeCall<'_>,
) -> Result<Value, Raise> {
    // Upstream's `File.write` returns before anything else when there is
    // nothing to write: no error, even for a file not open for writing.
    if bytes.is_empty() {
        return Ok(Value::Null);
    }
    let path = match handles.borrow().get(&id) {
        Some(Handle::Writing { path }) => Some(path.clone()),
        Some(Handle::Stdout | Handle::Stderr) => None,
        _ => return Err(fs_error(format!("io: file {id} is not open for writing"))),
    };
    match path {
        Some(path) => s.check(s.gate().write(&path, bytes.as_bytes(), WriteMode::Append))?,
        None if id == 1 => {
            let out = call.out();
            let _ = out.write_all(bytes.as_bytes()).and_then(|()| out.flush());
        }
        None => {
            let _ = std::io::stderr().write_all(bytes.as_bytes());
        }
    }
    Ok(Value::Null)
}

/// `read(handle, how)`: how is `-1` for all, `-2` for a line, else a count.
fn read(handles: &Handles, call: &mut NativeCall<'_>) -> Result<Value, Raise> {
    let (id, how) = (call.arg_int(0)?, call.arg_int(1)?);
    let mut table = handles.borrow_mut();
    let chunk = match table.get_mut(&id) {
        Some(Handle::Reading { data, at }) => take(&data[*at..], how).inspect(|c| *at += c.len()),
        Some(Handle::Stdin) => read_stdin(how),
        _ => return Err(fs_error(format!("io: file {id} is not open for reading"))),
    };
    Ok(match chunk {
        None => Value::Null,
        Some(bytes) => {
            let text = super::text_of(&bytes);
            let text = if how == -2 {
                text.trim_end_matches('\n')
            } else {
                &text
            };
            Value::str(text)
        }
    })
}

/// The next piece of `rest`: all of it, a line (with its newline), or `n` bytes.
fn take(rest: &[u8], how: i64) -> Option<Vec<u8>> {
    if rest.is_empty() && how != -1 {
        return None;
    }
    let len = match how {
        -1 => rest.len(),
        -2 => rest
            .iter()
            .position(|b| *b == b'\n')
            .map_or(rest.len(), |i| i + 1),
        n => usize::try_from(n).unwrap_or(0).min(rest.len()),
    };
    Some(rest[..len].to_vec())
}

fn read_stdin(how: i64) -> Option<Vec<u8>> {
    let mut stdin = std::io::stdin().lock();
    let mut buf = Vec::new();
    let got = match how {
        -1 => stdin.read_to_end(&mut buf),
        -2 => stdin.read_until(b'\n', &mut buf),
        n => (&mut stdin)
            .take(u64::try_from(n).unwrap_or(0))
            .read_to_end(&mut buf),
    };
    match got {
        Ok(0) if how != -1 => None,
        Ok(_) => Some(buf),
        Err(_) => None,
    }
}
