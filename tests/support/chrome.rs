//! A structure checker for Chrome trace-event JSON, as dinah's `Recorder`
//! writes it: required fields per phase, matched async spans, and complete
//! events properly nested on each thread.

use std::collections::HashMap;

use serde_json::Value;

/// Checks `text` and returns how many events of each phase it holds, or
/// the first problem found.
pub(crate) fn check(text: &str) -> Result<HashMap<String, usize>, String> {
    let root: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let events = root
        .get("traceEvents")
        .and_then(Value::as_array)
        .ok_or("no traceEvents array")?;
    if root
        .get("displayTimeUnit")
        .and_then(Value::as_str)
        .is_none()
    {
        return Err("no displayTimeUnit".into());
    }
    let mut phases: HashMap<String, usize> = HashMap::new();
    let mut open: HashMap<(String, String, String), f64> = HashMap::new();
    let mut complete: HashMap<(u64, u64), Vec<(f64, f64)>> = HashMap::new();
    for (index, event) in events.iter().enumerate() {
        let at = |what: &str| format!("event {index}: {what}: {event}");
        let name = event
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| at("no name"))?;
        let ph = event
            .get("ph")
            .and_then(Value::as_str)
            .ok_or_else(|| at("no ph"))?;
        let pid = event
            .get("pid")
            .and_then(Value::as_u64)
            .ok_or_else(|| at("no pid"))?;
        let number = |field: &str| {
            event
                .get(field)
                .and_then(Value::as_f64)
                .filter(|n| *n >= 0.0)
                .ok_or_else(|| at(&format!("no non-negative {field}")))
        };
        let text = |field: &str| {
            event
                .get(field)
                .and_then(Value::as_str)
                .ok_or_else(|| at(&format!("no {field}")))
        };
        let tid = || {
            event
                .get("tid")
                .and_then(Value::as_u64)
                .ok_or_else(|| at("no tid"))
        };
        let task = || {
            event
                .pointer("/args/task")
                .and_then(Value::as_u64)
                .filter(|&t| t > 0)
                .ok_or_else(|| at("no args.task"))
        };
        match ph {
            "M" => {
                event
                    .pointer("/args/name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| at("metadata without args.name"))?;
                match name {
                    "process_name" => {}
                    "thread_name" => {
                        tid()?;
                    }
                    _ => return Err(at("unknown metadata")),
                }
            }
            "X" => {
                let (ts, dur) = (number("ts")?, number("dur")?);
                text("cat")?;
                task()?;
                complete
                    .entry((pid, tid()?))
                    .or_default()
                    .push((ts, ts + dur));
            }
            "b" | "e" => {
                let ts = number("ts")?;
                tid()?;
                task()?;
                let key = (
                    text("cat")?.to_owned(),
                    text("id")?.to_owned(),
                    name.to_owned(),
                );
                if ph == "b" {
                    if open.insert(key, ts).is_some() {
                        return Err(at("async span begun twice"));
                    }
                } else {
                    let begun = open
                        .remove(&key)
                        .ok_or_else(|| at("async end without begin"))?;
                    if ts < begun {
                        return Err(at("async span ends before it begins"));
                    }
                }
            }
            "i" => {
                number("ts")?;
                tid()?;
                task()?;
                if !matches!(text("s")?, "g" | "p" | "t") {
                    return Err(at("instant scope is not g, p or t"));
                }
            }
            "C" => {
                number("ts")?;
                let args = event
                    .get("args")
                    .and_then(Value::as_object)
                    .filter(|args| !args.is_empty())
                    .ok_or_else(|| at("counter without args"))?;
                if !args.values().all(Value::is_number) {
                    return Err(at("counter with a value that is not a number"));
                }
            }
            _ => return Err(at("unknown phase")),
        }
        *phases.entry(ph.to_owned()).or_default() += 1;
    }
    for ((pid, tid), mut spans) in complete {
        spans.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
        let mut stack: Vec<f64> = Vec::new();
        for (start, end) in spans {
            while stack.last().is_some_and(|&outer| outer <= start) {
                stack.pop();
            }
            if stack.last().is_some_and(|&outer| end > outer) {
                return Err(format!(
                    "complete events overlap without nesting on pid {pid} tid {tid} at {start}"
                ));
            }
            stack.push(end);
        }
    }
    Ok(phases)
}
