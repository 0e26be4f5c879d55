//! Writes the seed corpora of the fuzz targets from valid encodings made
//! by the decoders' own encoders (and a few hand-made forms the decoders
//! also read), so libFuzzer starts from bytes that get past the first
//! check. `make fuzz` runs it before each run:
//!
//!     cargo run --release --example seeds -- <corpus-dir>
//!
//! writes `<corpus-dir>/<target>/seed-<name>` (existing seeds are
//! overwritten, what libFuzzer added is left alone).

use std::path::{Path, PathBuf};

use telha_jobs::config::KEYS;
use telha_jobs::payload::{self, Encoding, Value};
use telha_jobs::state::PerState;
use telha_jobs::store::codec::{self, Ext, JobRecord};
use telha_jobs::store::encode_counters;
use telha_jobs::store::format::{COMPATIBLE_FROM, FORMAT};
use telha_jobs::store::keys::{self, JobKey, Pos};
use telha_jobs::{Event, JobId, Scope, State};

struct Seeds {
    dir: PathBuf,
    n: usize,
}

impl Seeds {
    fn new(root: &Path, target: &str) -> Seeds {
        let dir = root.join(target);
        std::fs::create_dir_all(&dir).expect("create the corpus directory");
        Seeds { dir, n: 0 }
    }

    fn add(&mut self, name: &str, bytes: impl AsRef<[u8]>) {
        let path = self.dir.join(format!("seed-{:03}-{name}", self.n));
        std::fs::write(&path, bytes).expect("write a seed");
        self.n += 1;
    }
}

fn s(x: &str) -> Value {
    Value::from(x)
}

fn full_record() -> JobRecord {
    let mut r = JobRecord {
        kind: "ingest:pdf".into(),
        payload: payload::encode(&Value::Map(vec![(s("doc"), s("s3://b/k.pdf"))])).unwrap(),
        attempts: 2,
        worker_id: Some("worker-1".into()),
        lease_deadline: Some(1_767_225_600_000),
        generation: 7,
        idempotency_key: Some("doc-42".into()),
        created_at: 1_767_225_000_000,
        ready_at: 1_767_225_100_000,
        result: Some(vec![1, 0xa2, b'o', b'k']),
        last_error: Some("timeout".into()),
        events: Vec::new(),
        dropped_events: 0,
        max_attempts: Some(9),
        ext: Ext::default(),
    };
    r.log(1_767_225_000_000, Event::Enqueued, "");
    r.log(1_767_225_000_100, Event::Leased, "worker-1");
    r.log(1_767_225_000_200, Event::Failed, "timeout");
    r
}

fn records(root: &Path) {
    let mut out = Seeds::new(root, "record_decoder");
    let min = JobRecord {
        kind: "k".into(),
        ..JobRecord::default()
    };
    out.add("minimal", codec::encode(&min).unwrap());
    let full = full_record();
    out.add("full", codec::encode(&full).unwrap());
    let mut ext = full.clone();
    ext.ext.payload_encoding = Encoding::Value;
    ext.ext.result_encoding = Encoding::Bytes;
    ext.ext.ceiling = Some(3);
    out.add("ext-known", codec::encode(&ext).unwrap());
    // A payload in the payloads column family (format 2): the record's own
    // payload is empty and says the length.
    let mut outside = full.clone();
    outside.payload.clear();
    outside.ext.payload_len = Some(64 << 10);
    out.add("payload-outside", codec::encode(&outside).unwrap());
    // What a newer build may write: unknown tags, elements past the map.
    ext.ext.unknown = vec![
        (9, vec![0xc3]),
        (10, vec![0x92, 0x01, 0xa1, b'x']),
        (u64::MAX, vec![0xd6, 0x05, 0, 0, 0, 1]),
    ];
    ext.ext.tail = vec![
        vec![0xc0],
        vec![0x81, 0xa1, b'a', 0xcb, 0, 0, 0, 0, 0, 0, 0, 0],
    ];
    out.add("ext-unknown-and-tail", codec::encode(&ext).unwrap());
    let mut tail_only = min.clone();
    tail_only.ext.tail = vec![vec![0x2a]];
    out.add("tail-only", codec::encode(&tail_only).unwrap());
    // A long log: folded attempts then full entries.
    let mut long = full.clone();
    for i in 0..80u64 {
        long.log(1_767_226_000_000 + i, Event::Leased, "w");
        long.log(1_767_226_000_000 + i, Event::Failed, "boom");
    }
    out.add("long-log", codec::encode(&long).unwrap());
    // The array form with fewer elements (rows from before max_attempts),
    // a nil extension map, and the named-map form: as msgpack values after
    // the format byte (payload::encode writes the same 0x01 first).
    let legacy = Value::Array(vec![
        s("embed"),
        Value::Binary(vec![1, 2, 3]),
        Value::from(0),
        Value::Nil,
        Value::Nil,
        Value::from(1),
        Value::Nil,
        Value::from(1_700_000_000_000u64),
        Value::from(1_700_000_000_000u64),
        Value::Nil,
        Value::Nil,
        Value::Array(vec![Value::Array(vec![
            Value::from(1_700_000_000_000u64),
            s("enqueued"),
            s(""),
        ])]),
        Value::from(0),
    ]);
    out.add("legacy-13", payload::encode(&legacy).unwrap());
    let mut nil_ext = match legacy.clone() {
        Value::Array(a) => a,
        _ => unreachable!(),
    };
    nil_ext.extend([Value::Nil, Value::Nil, s("later")]);
    out.add(
        "nil-ext-tail",
        payload::encode(&Value::Array(nil_ext)).unwrap(),
    );
    // A byte array written as an array of integers (serde without serde_bytes).
    let ints = Value::Array(vec![
        s("k"),
        Value::Array(vec![Value::from(1), Value::from(255)]),
    ]);
    out.add("payload-as-ints", payload::encode(&ints).unwrap());
    let named = Value::Map(vec![
        (s("kind"), s("embed")),
        (s("payload"), Value::Binary(b"hello".to_vec())),
        (s("attempts"), Value::from(1)),
        (s("worker_id"), s("w")),
        (s("lease_deadline"), Value::from(5)),
        (s("generation"), Value::from(2)),
        (s("idempotency_key"), Value::Nil),
        (s("created_at"), Value::from(1)),
        (s("ready_at"), Value::from(1)),
        (s("result"), Value::Nil),
        (s("last_error"), s("e")),
        (s("events"), Value::Array(vec![])),
        (s("dropped_events"), Value::from(0)),
        (s("max_attempts"), Value::from(4)),
        (s("unknown_field"), Value::Array(vec![Value::Nil])),
    ]);
    out.add("named-map", payload::encode(&named).unwrap());
}

fn keys_and_counters(root: &Path) {
    let mut out = Seeds::new(root, "key_decoder");
    let id =
        JobId::from_bytes(*b"\x01\x90\xa0\x00\x00\x00\x70\x00\x80\x00\x00\x00\x00\x00\x00\x2a");
    let scope = Scope::from_bytes([7; 16]);
    for st in State::ALL {
        let k = JobKey {
            scope,
            state: st,
            priority: 128,
            ts: 1_767_225_600_000,
            id,
        };
        out.add(&format!("job-key-{st}"), k.encode());
    }
    let pos = Pos {
        ts: 1_767_225_600_000,
        id,
    };
    out.add("pos", pos.encode());
    out.add("pos-max", Pos::MAX.encode());
    out.add("kind-key", keys::kind_key(&scope, "ingest:pdf", 3, pos));
    out.add(
        "kind-key-empty",
        keys::kind_key(&Scope::SYSTEM, "", 0, Pos::MIN),
    );
    let mut c = PerState::<i64>::default();
    for (i, st) in State::ALL.iter().enumerate() {
        c[*st] = i as i64 + 1;
    }
    let v = encode_counters(&c);
    out.add("counters", &v);
    let mut longer = v.clone();
    longer.extend_from_slice(&(-1i64).to_le_bytes());
    out.add("counters-longer", &longer);
    out.add("counters-one", 5i64.to_le_bytes());
    out.add("counters-64", vec![0xffu8; 64 * 8]);
    // Length-prefixed pieces: an existing value and merge operands.
    let mut merge = Vec::new();
    for piece in [&v[..], &longer[..], &[9u8][..], &v[..16]] {
        merge.push(piece.len() as u8);
        merge.extend_from_slice(piece);
    }
    out.add("merge-operands", merge);
    out.add("hex", keys::hex(&pos.encode()));
    out.add("hex-upper", "0A0B0C");
}

fn payloads(root: &Path) {
    let mut out = Seeds::new(root, "payload_decoder");
    let values = [
        Value::Nil,
        Value::from(true),
        Value::from(-1),
        Value::from(u64::MAX),
        Value::from(i64::MIN),
        Value::F64(0.5),
        Value::F32(1.5),
        s("hello"),
        Value::Binary(vec![0, 1, 2]),
        Value::Ext(5, vec![1, 2, 3, 4]),
        Value::Array(vec![Value::from(1), s("a"), Value::Nil]),
        Value::Map(vec![
            (s("doc"), s("s3://b/k.pdf")),
            (s("pages"), Value::from(12)),
            (s("tags"), Value::Array(vec![s("a"), Value::Nil])),
            (s("blob"), Value::Binary(vec![0; 40])),
            (s("nested"), Value::Map(vec![(s("x"), Value::F64(-0.0))])),
        ]),
        Value::Map(vec![(Value::from(1), Value::from(2))]),
    ];
    for (i, v) in values.iter().enumerate() {
        out.add(&format!("value-{i}"), payload::encode(v).unwrap());
    }
    let mut deep = Value::Nil;
    for _ in 0..200 {
        deep = Value::Array(vec![deep]);
    }
    out.add("deep", payload::encode(&deep).unwrap());
    out.add("raw-bytes", b"plain text, not the convention");
}

fn markers(root: &Path) {
    let mut out = Seeds::new(root, "format_marker");
    out.add(
        "current",
        format!(
            "# telha-jobs store format (docs/ARCHITECTURE.md, \"Record format\")\n\
             format = {FORMAT}\ncompatible_from = {COMPATIBLE_FROM}\n"
        ),
    );
    out.add("format-only", "format = 3\n");
    out.add(
        "newer",
        "format = 9\r\ncompatible_from = 2\r\nfeatures = 3\n",
    );
    out.add("future", "  format=7\n\ncompatible_from = 5  \n# end");
}

/// A character whose code point picks `KEYS[i]` in the config target.
fn key_char(i: usize) -> char {
    (0x21u32..0x7f)
        .filter_map(char::from_u32)
        .find(|c| *c as usize % KEYS.len() == i)
        .expect("a printable character per key")
}

fn configs(root: &Path) {
    let mut out = Seeds::new(root, "config_parser");
    out.add(
        "operators-example",
        "[jobs]\nlease_ttl = \"10m\"\nmax_attempts = 8\n[jobs.backoff]\nbase = \"5s\"\n\
         [jobs.kinds.\"ingest:pdf\"]\nlease_ttl = \"30m\"\n\
         backoff_base = \"2h\"   # this kind's base; also raises its cap to 2 h\n",
    );
    let mut all = String::from("[jobs]\n");
    let mut kind = String::from("[jobs.kinds.\"k\"]\n");
    let mut env = String::new();
    for (i, k) in KEYS.iter().enumerate() {
        all.push_str(&format!("{} = \"{}\"\n", k.toml, k.default));
        if k.per_kind {
            kind.push_str(&format!("{} = \"{}\"\n", k.name, k.default));
        }
        if let Some(var) = k.env {
            env.push_str(&format!("{var}={}\n", k.default));
        }
        out.add(
            &format!("text-{}", k.name),
            format!("{}{}", key_char(i), k.default),
        );
    }
    out.add("every-key", &all);
    out.add("per-kind", &kind);
    out.add("env-lines", &env);
    out.add(
        "numbers",
        "[jobs]\nlease_ttl = 300\nreaper_interval = 0.5\ncompleted_retention = false\n\
         sync_writes = true\nbackoff = { factor = 2.5, cap = \"1h 30m\" }\n\
         [jobs.backoff_base_secs_by_kind]\n\"ingest:pdf\" = 7200\n",
    );
}

fn main() {
    let root = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("corpus"));
    records(&root);
    keys_and_counters(&root);
    payloads(&root);
    markers(&root);
    configs(&root);
    println!("seeds written under {}", root.display());
}
