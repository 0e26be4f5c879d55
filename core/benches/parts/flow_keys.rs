// Included by `flow.rs`: the lease cost beside 10,000 job keys held at
// their cap (issue 43).

/// (d) 10,000 keys under `key:*` cap 1, each holding its one lease with
/// two more jobs parked behind it, and a free backlog of unkeyed jobs;
/// beside a store with the same backlog and no key at all.
fn keyed_rows(quick: bool, chunk: usize, chunks: usize) {
    let keys = if quick { 1000 } else { 10_000 };
    let n = chunk * chunks;
    let (_d1, capped) = queue("flow-keys");
    let (_d2, none) = queue("flow-nokeys");
    capped
        .set_limit(&LimitTarget::EachKey, Limit::concurrency(1))
        .unwrap();
    for c in (0..keys * 3).step_by(1000) {
        let jobs = (c..(c + 1000).min(keys * 3))
            .map(|i| {
                let o = EnqueueOptions::default().key(format!("k{}", i % keys));
                NewJob::new("embed", PAYLOAD).with(o)
            })
            .collect();
        capped.enqueue_many(jobs).unwrap();
    }
    let any = LeaseOptions::default();
    for _ in 0..keys {
        capped.lease_next("holder", &any).unwrap().expect("a key's first job");
    }
    let backlog = chunk * (chunks + 1) + 10;
    for q in [&capped, &none] {
        fill(q, Scope::SYSTEM, backlog);
    }
    let mut t: Vec<[Duration; 3]> = Vec::new();
    for round in 0..=chunks {
        let mut this = [Duration::ZERO; 3];
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for w in order {
            this[w] = leases(if w == 0 { &none } else { &capped }, chunk);
        }
        this[2] = Duration::from_nanos(1);
        if round > 0 {
            t.push(this);
        }
    }
    let total = |i: usize| us(t.iter().map(|r| r[i]).sum(), n);
    let (f, c) = (total(0), total(1));
    row("lease_next, no job keys", format!("{f:.2} µs"), String::new());
    row(
        &format!("lease_next, {keys} keys at their key:* cap (2 parked each) + free work"),
        format!("{c:.2} µs"),
        format!(
            "{:.2}× no keys (total {:.2}×)",
            median_ratio(&t, 1, 0),
            c / f
        ),
    );
    let l = capped.limits().unwrap();
    assert_eq!(l[0].leased, keys as u64, "every key stayed at its cap");
}
