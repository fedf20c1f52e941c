//! short: a short-lived process. `short` writes a generated ~1 MiB JSON document to a
//! temporary file, then runs `<this binary> short-child <file>` 20 times in turn and
//! reports the median wall time of a child (spawn to exit) and the largest peak RSS
//! (VmHWM) a child reported. `short-child` reads the file, parses it into a
//! serde_json::Value, walks the whole tree, answers a few queries, and exits.

use crate::util::{minor_faults, status_kib, Report, Rng};
use serde_json::Value;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::process::Command;
use std::time::Instant;

const CHILDREN: usize = 20;
const USERS: u64 = 2600;

const COUNTRIES: &[&str] = &[
    "de", "fr", "jp", "br", "us", "in", "ng", "se", "mx", "kr", "au", "ca",
];
const SYLLABLES: &[&str] = &[
    "ka", "lo", "mi", "ren", "to", "sa", "vik", "el", "an", "dor", "is", "ul",
];
const TAGS: &[&str] = &[
    "admin", "beta", "trial", "gold", "silver", "mobile", "desktop", "api", "eu", "apac",
    "churned", "vip", "new", "legacy", "partner", "internal",
];

fn name(rng: &mut Rng, parts: u64) -> String {
    let mut s = String::new();
    for _ in 0..parts {
        s.push_str(SYLLABLES[rng.below(SYLLABLES.len() as u64) as usize]);
    }
    s
}

/// The document: `{"meta": {...}, "users": [ {...} x 2600 ]}`, about 1 MiB.
pub fn generate() -> String {
    let mut rng = Rng::new(0x6a_73_6f_6e);
    let mut out = String::with_capacity(1 << 20);
    out.push_str("{\"meta\":{\"version\":3,\"generated\":\"2024-01-01T00:00:00Z\",\"source\":\"indep\"},\"users\":[");
    for id in 0..USERS {
        if id > 0 {
            out.push(',');
        }
        let first = name(&mut rng, 2);
        let last = name(&mut rng, 3);
        let _ = write!(
            out,
            "{{\"id\":{},\"name\":\"{} {}\",\"email\":\"{}.{}@example.com\",\"age\":{},\"active\":{},\
             \"balance\":{:.2},\"country\":\"{}\",\"address\":{{\"street\":\"{} street {}\",\"city\":\"{}\",\"zip\":\"{:05}\"}},",
            id,
            first,
            last,
            first,
            last,
            rng.range(18, 90),
            rng.below(3) != 0,
            rng.unit() * 10000.0 - 2000.0,
            COUNTRIES[rng.below(COUNTRIES.len() as u64) as usize],
            name(&mut rng, 2),
            rng.range(1, 400),
            name(&mut rng, 3),
            rng.below(100000),
        );
        out.push_str("\"tags\":[");
        for t in 0..rng.range(0, 5) {
            if t > 0 {
                out.push(',');
            }
            let _ = write!(out, "\"{}\"", TAGS[rng.zipf(TAGS.len() as u64) as usize]);
        }
        out.push_str("],\"friends\":[");
        for f in 0..rng.range(0, 12) {
            if f > 0 {
                out.push(',');
            }
            let _ = write!(out, "{}", rng.below(USERS));
        }
        out.push_str("],\"scores\":[");
        for f in 0..rng.range(2, 8) {
            if f > 0 {
                out.push(',');
            }
            let _ = write!(out, "{:.3}", rng.unit());
        }
        out.push_str("],\"bio\":\"");
        for w in 0..rng.range(4, 30) {
            if w > 0 {
                out.push(' ');
            }
            let parts = rng.range(1, 4);
            out.push_str(&name(&mut rng, parts));
        }
        out.push_str("\"}");
    }
    out.push_str("]}");
    out
}

#[derive(Default)]
struct Walk {
    nodes: u64,
    string_bytes: u64,
    number_sum: f64,
    max_depth: u64,
}

fn walk(v: &Value, depth: u64, w: &mut Walk) {
    w.nodes += 1;
    w.max_depth = w.max_depth.max(depth);
    match v {
        Value::Null | Value::Bool(_) => {}
        Value::Number(n) => w.number_sum += n.as_f64().unwrap_or(0.0),
        Value::String(s) => w.string_bytes += s.len() as u64,
        Value::Array(a) => a.iter().for_each(|x| walk(x, depth + 1, w)),
        Value::Object(o) => {
            for (k, x) in o {
                w.string_bytes += k.len() as u64;
                walk(x, depth + 1, w);
            }
        }
    }
}

pub fn child(path: Option<&str>) {
    let start = Instant::now();
    let text = match path {
        Some(p) => std::fs::read_to_string(p).unwrap_or_else(|e| panic!("reading {}: {}", p, e)),
        None => generate(),
    };
    let doc: Value = serde_json::from_str(&text).expect("the generated JSON parses");

    let mut w = Walk::default();
    walk(&doc, 0, &mut w);

    let users = doc["users"].as_array().expect("users is an array");
    let active_30s = active_aged_30_to_50(users);
    let countries = balance_per_country(users);
    let top = top_tags(users);
    let by_id = users_by_id(users);
    let friend_names = friend_names_of_1234(&doc, &by_id);
    // Query 5: re-serialize the richest country's users.
    let subset = users_of(users, &countries[0].0);
    let serialized = serde_json::to_string(&subset).expect("serializes");

    let checksum = w.nodes
        ^ (w.string_bytes << 20)
        ^ (w.number_sum as u64)
        ^ (active_30s as u64) << 40
        ^ top.iter().map(|t| t.1).sum::<u64>()
        ^ friend_names.iter().map(|n| n.len() as u64).sum::<u64>() << 8
        ^ serialized.len() as u64;
    let elapsed = start.elapsed();
    drop(doc);
    Report::new("short-child")
        .ms("work_ms", elapsed)
        .kv("json_bytes", text.len())
        .kv("nodes", w.nodes)
        .kv("max_depth", w.max_depth)
        .kv("checksum", checksum)
        .kv("minflt", minor_faults())
        .kv("rss_hwm_kib", status_kib("VmHWM"))
        .print();
}

/// Query 1: active users aged 30-50.
fn active_aged_30_to_50(users: &[Value]) -> usize {
    users
        .iter()
        .filter(|u| u["active"].as_bool() == Some(true))
        .filter(|u| (30..=50).contains(&u["age"].as_u64().unwrap_or(0)))
        .count()
}

/// Query 2: users and balance per country, the richest country first.
fn balance_per_country(users: &[Value]) -> Vec<(String, (u64, f64))> {
    let mut per_country: HashMap<String, (u64, f64)> = HashMap::new();
    for u in users {
        let c = u["country"].as_str().unwrap_or("").to_string();
        let e = per_country.entry(c).or_insert((0, 0.0));
        e.0 += 1;
        e.1 += u["balance"].as_f64().unwrap_or(0.0);
    }
    let mut countries: Vec<(String, (u64, f64))> = per_country.into_iter().collect();
    countries.sort_by(|a, b| b.1 .1.partial_cmp(&a.1 .1).unwrap().then(a.0.cmp(&b.0)));
    countries
}

/// Query 3: the five most used tags.
fn top_tags(users: &[Value]) -> Vec<(&str, u64)> {
    let mut tags: HashMap<&str, u64> = HashMap::new();
    for u in users {
        for t in u["tags"].as_array().into_iter().flatten() {
            *tags.entry(t.as_str().unwrap_or("")).or_insert(0) += 1;
        }
    }
    let mut top: Vec<(&str, u64)> = tags.into_iter().collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    top.truncate(5);
    top
}

/// Query 4, first half: the users by id, for the join.
fn users_by_id(users: &[Value]) -> HashMap<u64, &Value> {
    users
        .iter()
        .map(|u| (u["id"].as_u64().unwrap(), u))
        .collect()
}

/// Query 4: names of the friends of user 1234 (a join by id).
fn friend_names_of_1234(doc: &Value, by_id: &HashMap<u64, &Value>) -> Vec<String> {
    doc["users"][1234]["friends"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| by_id.get(&f.as_u64()?))
        .map(|u| u["name"].as_str().unwrap_or("").to_uppercase())
        .collect()
}

/// The users of one country (query 5 serializes them).
fn users_of<'a>(users: &'a [Value], country: &str) -> Vec<&'a Value> {
    users
        .iter()
        .filter(|u| u["country"].as_str() == Some(country))
        .collect()
}

fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

pub fn parent() {
    let exe = std::env::current_exe().expect("current_exe");
    let path = std::env::temp_dir().join(format!("indep-short-{}.json", std::process::id()));
    std::fs::write(&path, generate()).expect("writing the JSON document");
    let mut times = Vec::new();
    let mut faults = Vec::new();
    let mut max_rss = 0u64;
    let mut checksum: Option<String> = None;
    let start = Instant::now();
    for i in 0..CHILDREN {
        let t = Instant::now();
        let out = Command::new(&exe).arg("short-child").arg(&path).output();
        let dt = t.elapsed();
        let out = match out {
            Ok(o) => o,
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                panic!("spawning short-child: {}", e);
            }
        };
        if !out.status.success() {
            let _ = std::fs::remove_file(&path);
            eprintln!("{}", String::from_utf8_lossy(&out.stderr));
            panic!("short-child #{} failed: {}", i, out.status);
        }
        let line = String::from_utf8_lossy(&out.stdout).into_owned();
        let rss: u64 = field(&line, "rss_hwm_kib")
            .and_then(|v| v.parse().ok())
            .expect("child reported rss_hwm_kib");
        let flt: f64 = field(&line, "minflt")
            .and_then(|v| v.parse().ok())
            .expect("child reported minflt");
        let sum = field(&line, "checksum")
            .expect("child reported checksum")
            .to_string();
        match &checksum {
            None => checksum = Some(sum),
            Some(c) => assert_eq!(c, &sum, "children disagree"),
        }
        max_rss = max_rss.max(rss);
        faults.push(flt);
        times.push(dt.as_secs_f64() * 1e3);
    }
    let total = start.elapsed();
    let _ = std::fs::remove_file(&path);
    let (min, max) = times
        .iter()
        .fold((f64::MAX, 0f64), |(a, b), &t| (a.min(t), b.max(t)));
    Report::new("short")
        .ms("work_ms", total)
        .kv("children", CHILDREN)
        .kv("median_child_ms", format!("{:.3}", median(&mut times)))
        .kv("min_child_ms", format!("{:.3}", min))
        .kv("max_child_ms", format!("{:.3}", max))
        .kv("median_child_minflt", median(&mut faults))
        .kv("max_child_rss_kib", max_rss)
        .kv("checksum", checksum.unwrap_or_default())
        .print();
}
