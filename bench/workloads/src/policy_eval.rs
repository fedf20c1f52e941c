//! Policy-like evaluation: a generated JSON document of users and resources is parsed into a
//! `serde_json::Value`, then many small access queries are evaluated, each cloning parts of the
//! document into an input value and building a decision value, as a policy engine does per
//! request.

use crate::{Outcome, Run, Scale, Timing, Workload, mix};
use seeded_rng::Rng;
use serde_json::{Value, json};

pub const WORKLOAD: Workload = Workload {
    name: "policy-eval",
    summary: "parse a JSON document, evaluate many queries that clone and build serde_json values",
    prepare,
    timing: Timing::Run,
    quiet: None,
};

const DEPARTMENTS: [&str; 6] = ["eng", "sales", "ops", "legal", "hr", "finance"];
const ROLES: [&str; 4] = ["admin", "auditor", "dev", "viewer"];

/// The generator's own model of the document, from which the expected decisions are derived.
struct User {
    name: String,
    department: usize,
    level: u64,
    roles: Vec<&'static str>,
}

struct Resource {
    owner: usize,
    tags: Vec<usize>,
    min_level: u64,
}

struct Query {
    user: usize,
    resource: usize,
    write: bool,
}

fn prepare(scale: Scale) -> Run {
    let (users, resources, queries, rounds) = (2_000, 2_000, scale.of(120_000), 3);
    let mut rng = Rng::new(3);
    let users: Vec<User> = (0..users)
        .map(|i| User {
            name: format!("user-{i}-{}", rng.next_u64() % 10_000),
            department: rng.below(DEPARTMENTS.len()),
            level: rng.below(10) as u64,
            roles: ROLES.iter().copied().filter(|_| rng.percent(15)).collect(),
        })
        .collect();
    let resources: Vec<Resource> = (0..resources)
        .map(|_| Resource {
            owner: rng.below(users.len()),
            tags: (0..rng.between(1, 3))
                .map(|_| rng.below(DEPARTMENTS.len()))
                .collect(),
            min_level: rng.below(10) as u64,
        })
        .collect();
    let queries: Vec<Query> = (0..queries)
        .map(|_| Query {
            user: rng.below(users.len()),
            resource: rng.below(resources.len()),
            write: rng.percent(30),
        })
        .collect();

    let document = serde_json::to_string(&document(&users, &resources)).expect("serialisable");
    let tallies: Vec<u64> = queries
        .iter()
        .map(|q| {
            let (allow, reasons) = decide_from_model(&users, &resources, q);
            tally(allow, reasons.iter().map(String::as_str))
        })
        .collect();
    let expected = (0..rounds).fold(0, |sum, _| tallies.iter().copied().fold(sum, mix));
    Box::new(move || {
        let checksum = (0..rounds).fold(0, |sum, _| {
            let document: Value = serde_json::from_str(&document).expect("the document parses");
            queries.iter().fold(sum, |sum, q| {
                let decision = evaluate(&input(&document, q));
                let reasons = decision["reasons"].as_array().expect("reasons");
                let allow = decision["allow"].as_bool().expect("allow");
                mix(sum, tally(allow, reasons.iter().filter_map(Value::as_str)))
            })
        });
        Outcome { checksum, expected }
    })
}

fn document(users: &[User], resources: &[Resource]) -> Value {
    let users: Vec<Value> = users
        .iter()
        .map(|u| {
            json!({
                "name": u.name,
                "roles": u.roles,
                "attributes": { "department": DEPARTMENTS[u.department], "level": u.level },
            })
        })
        .collect();
    let resources: Vec<Value> = resources
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let tags: Vec<&str> = r.tags.iter().map(|&t| DEPARTMENTS[t]).collect();
            json!({
                "id": format!("resource/{i}"),
                "owner": users[r.owner]["name"],
                "tags": tags,
                "min_level": r.min_level,
            })
        })
        .collect();
    json!({ "version": 1, "users": users, "resources": resources })
}

fn tally<'a>(allow: bool, reasons: impl Iterator<Item = &'a str>) -> u64 {
    reasons.fold(u64::from(allow), |sum, r| mix(sum, r.len() as u64))
}

/// The request a policy engine receives: copies of the subject and object, and the action.
fn input(document: &Value, q: &Query) -> Value {
    json!({
        "user": document["users"][q.user].clone(),
        "resource": document["resources"][q.resource].clone(),
        "action": if q.write { "write" } else { "read" },
    })
}

/// The policy, over JSON values.
fn evaluate(input: &Value) -> Value {
    let user = &input["user"];
    let resource = &input["resource"];
    let write = input["action"] == "write";
    let has_role = |role: &str| {
        user["roles"]
            .as_array()
            .is_some_and(|roles| roles.iter().any(|r| r == role))
    };
    let department = user["attributes"]["department"].as_str().unwrap_or("");
    let level = user["attributes"]["level"].as_u64().unwrap_or(0);
    let mut reasons = Vec::new();
    let mut allow = false;
    if has_role("admin") {
        allow = true;
        reasons.push(Value::from("role:admin"));
    }
    if !write && has_role("auditor") {
        allow = true;
        reasons.push(Value::from("role:auditor"));
    }
    if write && resource["owner"] == user["name"] {
        allow = true;
        reasons.push(Value::from(format!(
            "owner:{}",
            user["name"].as_str().unwrap_or("")
        )));
    }
    let tagged = resource["tags"]
        .as_array()
        .is_some_and(|tags| tags.iter().any(|t| t == department));
    let cleared = level >= resource["min_level"].as_u64().unwrap_or(u64::MAX);
    if !write && tagged && cleared {
        allow = true;
        reasons.push(Value::from(format!("department:{department}")));
    }
    if !allow {
        reasons.push(Value::from(if tagged {
            "denied:level"
        } else {
            "denied:department"
        }));
    }
    json!({ "allow": allow, "reasons": reasons })
}

/// The same policy, over the generator's model.
fn decide_from_model(users: &[User], resources: &[Resource], q: &Query) -> (bool, Vec<String>) {
    let (user, resource) = (&users[q.user], &resources[q.resource]);
    let mut reasons = Vec::new();
    if user.roles.contains(&"admin") {
        reasons.push("role:admin".to_string());
    }
    if !q.write && user.roles.contains(&"auditor") {
        reasons.push("role:auditor".to_string());
    }
    if q.write && resource.owner == q.user {
        reasons.push(format!("owner:{}", user.name));
    }
    let tagged = resource.tags.contains(&user.department);
    if !q.write && tagged && user.level >= resource.min_level {
        reasons.push(format!("department:{}", DEPARTMENTS[user.department]));
    }
    let allow = !reasons.is_empty();
    if !allow {
        reasons.push(
            if tagged {
                "denied:level"
            } else {
                "denied:department"
            }
            .to_string(),
        );
    }
    (allow, reasons)
}
