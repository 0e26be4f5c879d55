//! The jobs-row value decoder (`store::codec::decode`) on arbitrary bytes:
//! it must answer a record or `Corruption`, never panic, and a record it
//! accepts must survive an encode/decode round trip unchanged.
#![no_main]

use libfuzzer_sys::fuzz_target;
use telha_jobs::store::codec;
use telha_jobs::ErrorKind;

fuzz_target!(|data: &[u8]| {
    match codec::decode(data) {
        Ok(r) => {
            let again = codec::decode(&codec::encode(&r).expect("a decoded record encodes"))
                .expect("an encoded record decodes");
            assert_eq!(again, r);
        }
        Err(e) => assert_eq!(e.kind(), ErrorKind::Corruption),
    }
});
