//! The natives behind `buzz:crypto` (`crypto.buzz`): message digests of a
//! string, computed by the RustCrypto crates. Pure functions of their
//! arguments; they reach nothing outside the interpreter.

use super::super::vm::native::{NativeModule, Raise};
use super::super::vm::value::Value;
use sha2::Digest;

/// One algorithm: the digest of its input.
type HashFn = fn(&[u8]) -> Vec<u8>;

/// Upstream's `HashAlgorithm` cases, by their ordinal in `crypto.buzz`.
const ALGORITHMS: [HashFn; 13] = [
    digest::<md5::Md5>,
    digest::<sha1::Sha1>,
    digest::<sha2::Sha224>,
    digest::<sha2::Sha256>,
    digest::<sha2::Sha384>,
    digest::<sha2::Sha512>,
    digest::<sha2::Sha512_224>,
    digest::<sha2::Sha512_256>,
    sha512_truncated_256,
    digest::<sha3::Sha3_224>,
    digest::<sha3::Sha3_256>,
    digest::<sha3::Sha3_384>,
    digest::<sha3::Sha3_512>,
];

fn digest<D: Digest>(data: &[u8]) -> Vec<u8> {
    D::digest(data).to_vec()
}

/// Upstream's `Sha512T256` is SHA-512 (its own initial values) cut to 256
/// bits, unlike `Sha512_256`, which starts from the FIPS 180-4 values for
/// SHA-512/256.
fn sha512_truncated_256(data: &[u8]) -> Vec<u8> {
    let mut full = digest::<sha2::Sha512>(data);
    full.truncate(32);
    full
}

/// `cryptoraw.digest(algorithm, data:)`.
pub(crate) fn natives() -> NativeModule {
    NativeModule::new("cryptoraw").function("digest", |c| {
        let algorithm = c.arg_int(0)?;
        let hash = usize::try_from(algorithm)
            .ok()
            .and_then(|i| ALGORITHMS.get(i))
            .ok_or_else(|| Raise::type_error(format!("crypto.hash: no algorithm {algorithm}")))?;
        Ok(Value::from_bytes(hash(c.arg_bytes(1)?)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Published test vectors ("abc", FIPS 180-4 / FIPS 202 examples;
    /// RFC 1321 for MD5), one per algorithm, in `crypto.buzz`'s order.
    #[test]
    fn each_algorithm_gives_its_published_digest_of_abc() {
        let expected = [
            "900150983cd24fb0d6963f7d28e17f72",
            "a9993e364706816aba3e25717850c26c9cd0d89d",
            "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7",
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7",
            "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
            "4634270f707b6a54daae7530460842e20e37ed265ceee9a43e8924aa",
            "53048e2681941ef99b2e29b76b4c7dabe4c2d0c634fc6d46e0e2f13107e7af23",
            "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a",
            "e642824c3f8cf24ad09234ee7d3c766fc9a3a5168d0c94ad73b46fdf",
            "3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532",
            "ec01498288516fc926459f58e2c6ad8df9b473cb0fc08c2596da7cf0e49be4b298d88cea927ac7f539f1edf228376d25",
            "b751850b1a57168a5693cd924b6b096e08f621827444f70d884f5d0240d2712e10e116e9192af3c91a7ec57647e3934057340b4cf408d5a56592f8274eec53f0",
        ];
        for (i, want) in expected.iter().enumerate() {
            assert_eq!(hex(&ALGORITHMS[i](b"abc")), *want, "algorithm {i}");
        }
    }
}
