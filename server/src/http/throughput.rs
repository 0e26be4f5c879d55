//! Throughput over the last minutes: the transition counters sampled every
//! [`INTERVAL`], kept for [`POINTS`] intervals (memory: a few KiB), turned
//! into per-second rates when asked.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Map, Value as Json};
use telha_jobs::{Event, Queue};

use crate::source::Source;
use tokio::sync::watch;

use crate::service::now_ms;

pub(crate) const INTERVAL: Duration = Duration::from_secs(5);
/// 15 minutes of points.
pub(crate) const POINTS: usize = 180;
/// The transitions a graph shows.
const SHOWN: [Event; 5] = [
    Event::Enqueued,
    Event::Leased,
    Event::Completed,
    Event::Failed,
    Event::Dead,
];

#[derive(Default)]
pub(crate) struct Samples {
    /// (ms since the epoch, the counter of each of SHOWN).
    ring: Mutex<VecDeque<(u64, [u64; SHOWN.len()])>>,
}

impl Samples {
    fn push(&self, at: u64, counts: [u64; SHOWN.len()]) {
        let mut r = self.ring.lock().unwrap_or_else(|p| p.into_inner());
        if r.len() > POINTS {
            r.pop_front();
        }
        r.push_back((at, counts));
    }

    /// `{"interval_ms", "points": [{"ts_ms", "enqueued": per s, …}]}`,
    /// oldest first: one point per pair of consecutive samples.
    pub fn json(&self) -> Json {
        let r = self.ring.lock().unwrap_or_else(|p| p.into_inner());
        let points: Vec<Json> = r
            .iter()
            .zip(r.iter().skip(1))
            .map(|((t0, c0), (t1, c1))| {
                let secs = (t1.saturating_sub(*t0) as f64 / 1000.0).max(0.001);
                let mut o = Map::new();
                o.insert("ts_ms".into(), json!(t1));
                for (i, ev) in SHOWN.iter().enumerate() {
                    let rate = c1[i].saturating_sub(c0[i]) as f64 / secs;
                    o.insert(ev.name().into(), json!((rate * 100.0).round() / 100.0));
                }
                Json::Object(o)
            })
            .collect();
        json!({"interval_ms": INTERVAL.as_millis() as u64, "points": points})
    }
}

fn read(q: &Queue) -> Option<[u64; SHOWN.len()]> {
    let all = q.transitions().ok()?;
    let mut out = [0u64; SHOWN.len()];
    for (ev, n) in all {
        if let Some(i) = SHOWN.iter().position(|s| *s == ev) {
            out[i] = n;
        }
    }
    Some(out)
}

/// Sample until `quit`; a closed queue (or, in cluster mode, no engine on
/// this node) just leaves a gap.
pub(crate) async fn sample(source: Source, samples: Arc<Samples>, mut quit: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = quit.wait_for(|q| *q) => return,
        }
        if let Some(c) = source.queue().ok().and_then(|q| read(&q)) {
            samples.push(now_ms(), c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_differences_over_the_interval_and_the_ring_is_bounded() {
        let s = Samples::default();
        assert_eq!(s.json()["points"], json!([]));
        s.push(10_000, [0, 0, 0, 0, 0]);
        s.push(15_000, [50, 25, 10, 5, 0]);
        let p = &s.json()["points"][0];
        assert_eq!(p["ts_ms"], json!(15_000));
        assert_eq!(p["enqueued"], json!(10.0));
        assert_eq!(p["completed"], json!(2.0));
        for i in 0..500 {
            s.push(20_000 + i * 5000, [0; 5]);
        }
        assert_eq!(s.json()["points"].as_array().unwrap().len(), POINTS);
    }
}
