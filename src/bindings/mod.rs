//! The Buzz native modules `fs`, `sh` and `env`: they adapt Buzz values to
//! the gate in `enforce` and turn its denials into catchable `SandboxError`s.
