//! The core's `otel` feature under opentelemetry_sdk's in-memory exporter
//! (issue 45): an enqueue inside a span carries its `traceparent` (and
//! `tracestate`) unless the caller set either key; the Worker runs each
//! handler attempt in a CONSUMER span `process <kind>` whose parent and
//! link are the producer's context, with the messaging attributes Python's
//! and Node's Workers set; a retried job gives two such spans, each linked
//! to the producer and neither a child of the other.
//!
//! One tracer provider and one propagator for the process (the globals);
//! each test uses kinds of its own and picks its spans by trace id.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags, TraceId, TraceState,
    Tracer, TracerProvider as _,
};
use opentelemetry::{global, Context, KeyValue, Value};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use telha_jobs::trace_context::{TRACEPARENT, TRACESTATE};
use telha_jobs::{Config, EnqueueOptions, JobId, JobStore, NewJob, Outcome, Queue, State, Worker};

const MS: Duration = Duration::from_millis(1);

struct Otel {
    exporter: InMemorySpanExporter,
    provider: SdkTracerProvider,
}

/// The process's exporter, installed (with the W3C propagator) once.
fn otel() -> &'static Otel {
    static O: OnceLock<Otel> = OnceLock::new();
    O.get_or_init(|| {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        global::set_tracer_provider(provider.clone());
        global::set_text_map_propagator(TraceContextPropagator::new());
        Otel { exporter, provider }
    })
}

/// The finished spans of trace `t`.
fn spans_of(t: TraceId) -> Vec<SpanData> {
    otel()
        .exporter
        .get_finished_spans()
        .unwrap()
        .into_iter()
        .filter(|s| s.span_context.trace_id() == t)
        .collect()
}

/// Run `f` inside a new producer span; its context and `f`'s answer.
fn in_producer_span<T>(f: impl FnOnce() -> T) -> (SpanContext, T) {
    let tracer = otel().provider.tracer("producer");
    let span = tracer.start("request");
    let cx = Context::current_with_span(span);
    let sc = cx.span().span_context().clone();
    let out = {
        let _g = cx.clone().attach();
        f()
    };
    cx.span().end();
    (sc, out)
}

fn traceparent_of(sc: &SpanContext) -> String {
    format!(
        "00-{}-{}-{:02x}",
        sc.trace_id(),
        sc.span_id(),
        sc.trace_flags().to_u8()
    )
}

fn open() -> (tempfile::TempDir, Queue) {
    let dir = tempfile::tempdir().unwrap();
    let q = Queue::open(dir.path(), Config::default()).unwrap();
    (dir, q)
}

fn metadata(q: &Queue, id: &JobId) -> BTreeMap<String, String> {
    q.get(id).unwrap().unwrap().metadata
}

fn eventually(what: &str, f: impl Fn() -> bool) {
    let end = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < end, "timed out waiting for: {what}");
        std::thread::sleep(5 * MS);
    }
}

fn attr(s: &SpanData, key: &str) -> Option<Value> {
    s.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.clone())
}

#[test]
fn enqueue_inside_a_span_carries_its_traceparent_on_every_path() {
    let (_d, q) = open();
    let (sc, (one, many, (children, parent))) = in_producer_span(|| {
        let one = q
            .enqueue("otel-one", b"p", EnqueueOptions::default())
            .unwrap();
        let many = q
            .enqueue_many(vec![
                NewJob::new("otel-many", b"a".to_vec()),
                NewJob::new("otel-many", b"b".to_vec()),
            ])
            .unwrap();
        let group = q
            .enqueue_group(
                vec![NewJob::new("otel-child", b"c".to_vec())],
                NewJob::new("otel-parent", b"p".to_vec()),
            )
            .unwrap();
        (one, many, group)
    });
    let want = traceparent_of(&sc);
    let mut ids = vec![one.id, parent.id];
    ids.extend(many.iter().map(|e| e.id));
    ids.extend(children.iter().map(|e| e.id));
    assert_eq!(ids.len(), 5);
    for id in &ids {
        let m = metadata(&q, id);
        assert_eq!(m.get(TRACEPARENT), Some(&want), "{id}");
        // The SDK's span has an empty trace state: no tracestate key.
        assert_eq!(m.get(TRACESTATE), None, "{id}");
    }
}

#[test]
fn a_trace_state_goes_with_it_and_no_span_adds_nothing() {
    let (_d, q) = open();
    // A remote parent with a trace state: the producer span inherits it.
    let remote = SpanContext::new(
        TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap(),
        SpanId::from_hex("00f067aa0ba902b7").unwrap(),
        TraceFlags::SAMPLED,
        true,
        "vendor=abc,other=1".parse::<TraceState>().unwrap(),
    );
    let tracer = otel().provider.tracer("producer");
    let parent = Context::new().with_remote_span_context(remote);
    let span = tracer.start_with_context("request", &parent);
    let cx = parent.with_span(span);
    let id = {
        let _g = cx.clone().attach();
        q.enqueue("otel-state", b"p", EnqueueOptions::default())
            .unwrap()
            .id
    };
    cx.span().end();
    let m = metadata(&q, &id);
    assert_eq!(
        m.get(TRACEPARENT),
        Some(&traceparent_of(cx.span().span_context()))
    );
    assert!(m[TRACEPARENT].contains("4bf92f3577b34da6a3ce929d0e0e4736"));
    assert_eq!(
        m.get(TRACESTATE).map(String::as_str),
        Some("vendor=abc,other=1")
    );

    // No active span: the metadata is as the caller gave it.
    let id = q
        .enqueue("otel-state", b"p", EnqueueOptions::default().meta("k", "v"))
        .unwrap()
        .id;
    let m = metadata(&q, &id);
    assert_eq!(m.len(), 1, "{m:?}");
    assert_eq!(m["k"], "v");
}

#[test]
fn the_callers_own_keys_are_kept_whole() {
    let (_d, q) = open();
    let theirs = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let (_, (a, b)) = in_producer_span(|| {
        let a = q
            .enqueue(
                "otel-own",
                b"p",
                EnqueueOptions::default().meta(TRACEPARENT, theirs),
            )
            .unwrap()
            .id;
        // Only a tracestate set: no traceparent is added beside it.
        let b = q
            .enqueue(
                "otel-own",
                b"p",
                EnqueueOptions::default().meta(TRACESTATE, "mine=1"),
            )
            .unwrap()
            .id;
        (a, b)
    });
    let m = metadata(&q, &a);
    assert_eq!(m.get(TRACEPARENT).map(String::as_str), Some(theirs));
    assert_eq!(m.get(TRACESTATE), None);
    let m = metadata(&q, &b);
    assert_eq!(m.get(TRACEPARENT), None);
    assert_eq!(m.get(TRACESTATE).map(String::as_str), Some("mine=1"));
}

#[test]
fn the_producer_context_is_read_from_metadata_or_not_at_all() {
    let mut m = BTreeMap::new();
    assert!(telha_jobs::otel::producer_context(&m).is_none());
    m.insert(TRACEPARENT.to_string(), "00-zz".to_string());
    assert!(telha_jobs::otel::producer_context(&m).is_none());
    m.insert(
        TRACEPARENT.to_string(),
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00".to_string(),
    );
    m.insert(TRACESTATE.to_string(), "a=1".to_string());
    let sc = telha_jobs::otel::producer_context(&m).unwrap();
    assert!(sc.is_remote());
    assert!(!sc.is_sampled());
    assert_eq!(
        sc.trace_id().to_string(),
        "0af7651916cd43dd8448eb211c80319c"
    );
    assert_eq!(sc.span_id().to_string(), "b7ad6b7169203331");
    assert_eq!(sc.trace_state().get("a"), Some("1"));
}

/// Run a Worker for `kind` until `done` jobs completed; the span id
/// current inside each handler call, in call order.
fn work(q: &Queue, kind: &str, done: u64, retry_first: bool) -> Vec<SpanContext> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let store: Arc<dyn JobStore> = Arc::new(q.clone());
    let w = Worker::builder(store, move |ctx| {
        s.lock()
            .unwrap()
            .push(Context::current().span().span_context().clone());
        if retry_first && ctx.job().attempts == 0 {
            return Outcome::Retry {
                error: "first attempt fails".into(),
                after: Duration::ZERO,
            };
        }
        Outcome::done()
    })
    .kinds([kind])
    .poll_wait(20 * MS)
    .build()
    .unwrap()
    .start()
    .unwrap();
    eventually("jobs completed", || w.counts().completed == done);
    w.stop(Duration::from_secs(5));
    let out = seen.lock().unwrap().clone();
    out
}

fn assert_process_span(s: &SpanData, kind: &str, id: &JobId, attempt: i64) {
    assert_eq!(s.name, format!("process {kind}"));
    assert_eq!(s.span_kind, SpanKind::Consumer);
    for (k, v) in [
        ("messaging.system", Value::from("telha")),
        ("messaging.operation.type", Value::from("process")),
        ("messaging.operation.name", Value::from("process")),
        ("messaging.destination.name", Value::from(kind.to_string())),
        ("messaging.message.id", Value::from(id.to_string())),
        ("telha.job.kind", Value::from(kind.to_string())),
        ("telha.job.attempt", Value::I64(attempt)),
    ] {
        assert_eq!(attr(s, k), Some(v), "{k} on {:?}", s.attributes);
    }
    assert_eq!(s.instrumentation_scope.name(), "telha-jobs");
}

#[test]
fn a_handler_runs_in_a_consumer_span_linked_to_the_producer() {
    let (_d, q) = open();
    let kind = "otel-work";
    let (producer, id) =
        in_producer_span(|| q.enqueue(kind, b"p", EnqueueOptions::default()).unwrap().id);
    let inside = work(&q, kind, 1, false);
    assert_eq!(q.get(&id).unwrap().unwrap().state, State::Completed);

    let spans: Vec<_> = spans_of(producer.trace_id())
        .into_iter()
        .filter(|s| s.name.starts_with("process "))
        .collect();
    assert_eq!(spans.len(), 1, "{spans:?}");
    let s = &spans[0];
    assert_process_span(s, kind, &id, 1);
    // One trace: the producer's span is the parent and the one link.
    assert_eq!(s.parent_span_id, producer.span_id());
    assert!(s.parent_span_is_remote);
    assert_eq!(s.links.links.len(), 1);
    assert_eq!(s.links.links[0].span_context.span_id(), producer.span_id());
    assert_eq!(
        s.links.links[0].span_context.trace_id(),
        producer.trace_id()
    );
    assert_eq!(s.status, Status::Unset);
    // The span is current inside the handler.
    assert_eq!(inside.len(), 1);
    assert_eq!(inside[0].span_id(), s.span_context.span_id());
    assert_eq!(inside[0].trace_id(), producer.trace_id());
}

#[test]
fn a_retried_job_gives_two_process_spans_each_linked_to_the_producer() {
    let (_d, q) = open();
    let kind = "otel-retry";
    let (producer, id) =
        in_producer_span(|| q.enqueue(kind, b"p", EnqueueOptions::default()).unwrap().id);
    let inside = work(&q, kind, 1, true);
    assert_eq!(inside.len(), 2);

    let mut spans: Vec<_> = spans_of(producer.trace_id())
        .into_iter()
        .filter(|s| s.name.starts_with("process "))
        .collect();
    spans.sort_by_key(|s| s.start_time);
    assert_eq!(spans.len(), 2, "{spans:?}");
    for (i, s) in spans.iter().enumerate() {
        assert_process_span(s, kind, &id, i as i64 + 1);
        // Each attempt's parent is the producer, never the attempt before.
        assert_eq!(s.parent_span_id, producer.span_id());
        assert_eq!(s.links.links.len(), 1);
        assert_eq!(s.links.links[0].span_context.span_id(), producer.span_id());
        assert_eq!(inside[i].span_id(), s.span_context.span_id());
    }
    assert_ne!(
        spans[0].span_context.span_id(),
        spans[1].span_context.span_id()
    );
    assert_eq!(
        spans[0].status,
        Status::error("first attempt fails"),
        "the failed attempt's span"
    );
    assert_eq!(spans[1].status, Status::Unset);
}

#[test]
fn a_job_without_context_gets_a_root_span_without_links() {
    let (_d, q) = open();
    let kind = "otel-root";
    let id = q.enqueue(kind, b"p", EnqueueOptions::default()).unwrap().id;
    assert!(metadata(&q, &id).is_empty());
    let inside = work(&q, kind, 1, false);
    assert_eq!(inside.len(), 1);
    let t = inside[0].trace_id();
    assert!(inside[0].is_valid());
    let spans = spans_of(t);
    assert_eq!(spans.len(), 1, "{spans:?}");
    let s = &spans[0];
    assert_process_span(s, kind, &id, 1);
    assert_eq!(s.parent_span_id, SpanId::INVALID);
    assert!(s.links.links.is_empty());
}

/// Guard the helper's KeyValue import against drift: the attribute keys
/// are exactly the seven Python's and Node's Workers set.
#[test]
fn the_attribute_set_is_exactly_the_seven_keys() {
    let (_d, q) = open();
    let kind = "otel-keys";
    let (producer, _) =
        in_producer_span(|| q.enqueue(kind, b"p", EnqueueOptions::default()).unwrap().id);
    work(&q, kind, 1, false);
    let spans: Vec<_> = spans_of(producer.trace_id())
        .into_iter()
        .filter(|s| s.name.starts_with("process "))
        .collect();
    assert_eq!(spans.len(), 1);
    let mut keys: Vec<KeyValue> = spans[0].attributes.clone();
    keys.sort_by(|a, b| a.key.as_str().cmp(b.key.as_str()));
    let names: Vec<&str> = keys.iter().map(|k| k.key.as_str()).collect();
    assert_eq!(
        names,
        [
            "messaging.destination.name",
            "messaging.message.id",
            "messaging.operation.name",
            "messaging.operation.type",
            "messaging.system",
            "telha.job.attempt",
            "telha.job.kind",
        ]
    );
}

#[test]
fn a_remote_queue_sends_the_context_and_its_worker_links_to_it() {
    let (_d, q) = open();
    let server = telha_jobs_server::serve(
        q.clone(),
        telha_jobs_server::ServeOptions {
            listen: "127.0.0.1:0".into(),
            ..Default::default()
        },
    )
    .unwrap();
    let remote = telha_jobs_client::RemoteQueue::connect(
        &server.url(),
        telha_jobs_client::ConnectOptions::default(),
    )
    .unwrap();
    let kind = "otel-remote";
    let (producer, ids) = in_producer_span(|| {
        let mut ids = vec![
            remote
                .enqueue(kind, b"p", EnqueueOptions::default())
                .unwrap()
                .id,
        ];
        let many = remote
            .enqueue_many(vec![NewJob::new(kind, b"m".to_vec())])
            .unwrap();
        ids.extend(many.iter().map(|e| e.id));
        let (children, parent) = remote
            .enqueue_group(
                vec![NewJob::new(kind, b"c".to_vec())],
                NewJob::new("otel-remote-parent", b"p".to_vec()),
            )
            .unwrap();
        ids.extend(children.iter().map(|e| e.id));
        ids.push(parent.id);
        ids
    });
    let want = traceparent_of(&producer);
    for id in &ids {
        assert_eq!(metadata(&q, id).get(TRACEPARENT), Some(&want), "{id}");
    }

    // A Worker over the RemoteQueue: each handler in a linked span.
    let store: Arc<dyn JobStore> = Arc::new(remote);
    let w = Worker::builder(store, |_ctx| Outcome::done())
        .kinds([kind])
        .poll_wait(20 * MS)
        .build()
        .unwrap()
        .start()
        .unwrap();
    eventually("3 remote jobs completed", || w.counts().completed == 3);
    w.stop(Duration::from_secs(5));
    let spans: Vec<_> = spans_of(producer.trace_id())
        .into_iter()
        .filter(|s| s.name == format!("process {kind}"))
        .collect();
    assert_eq!(spans.len(), 3, "{spans:?}");
    for s in &spans {
        assert_eq!(s.parent_span_id, producer.span_id());
        assert_eq!(s.links.links.len(), 1);
        assert_eq!(s.links.links[0].span_context.span_id(), producer.span_id());
        let id = attr(s, "messaging.message.id").unwrap().to_string();
        assert!(ids[..3].iter().any(|i| i.to_string() == id), "{id}");
    }
    server.shutdown(Duration::from_secs(2));
}

#[test]
fn a_handlers_follow_up_carries_the_process_spans_context() {
    let (_d, q) = open();
    let kind = "otel-parent-work";
    let (producer, _) =
        in_producer_span(|| q.enqueue(kind, b"p", EnqueueOptions::default()).unwrap().id);
    let store: Arc<dyn JobStore> = Arc::new(q.clone());
    let w = Worker::builder(store, |ctx| {
        ctx.follow_up(NewJob::new("otel-followed", b"f".to_vec()));
        Outcome::done()
    })
    .kinds([kind])
    .poll_wait(20 * MS)
    .build()
    .unwrap()
    .start()
    .unwrap();
    eventually("the parent completed", || w.counts().completed == 1);
    w.stop(Duration::from_secs(5));
    let spans: Vec<_> = spans_of(producer.trace_id())
        .into_iter()
        .filter(|s| s.name == format!("process {kind}"))
        .collect();
    assert_eq!(spans.len(), 1);
    let followed = q
        .lease_next("t", &telha_jobs::LeaseOptions::default())
        .unwrap()
        .expect("the follow-up job");
    assert_eq!(followed.kind, "otel-followed");
    assert_eq!(
        followed.metadata.get(TRACEPARENT),
        Some(&traceparent_of(&spans[0].span_context))
    );
}
