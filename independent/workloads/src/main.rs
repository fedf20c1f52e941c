//! Independent allocator workloads. One binary, one shape per run:
//! `workloads <shape>`; it prints one `key=value` line at the end.

mod alloc;
mod buffers;
mod growth;
mod hashmap;
mod idle;
mod pipeline;
mod postings;
mod regrow;
mod short;
mod util;

const SHAPES: &[&str] = &[
    "growth",
    "regrow",
    "hashmap",
    "postings",
    "short",
    "buffers",
    "pipeline",
    "producer-exit",
    "bursty",
    "idle-light",
    "idle-still",
];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let shape = args.get(1).map(String::as_str).unwrap_or("");
    match shape {
        "growth" => growth::run(),
        "regrow" => regrow::run(),
        "hashmap" => hashmap::run(),
        "postings" => postings::run(),
        "short" => short::parent(),
        "short-child" => short::child(args.get(2).map(String::as_str)),
        "buffers" => buffers::run(),
        "pipeline" => pipeline::run(false),
        "producer-exit" => pipeline::run(true),
        "bursty" => idle::bursty(),
        "idle-light" => idle::idle(true),
        "idle-still" => idle::idle(false),
        "list" => println!("{}", SHAPES.join(" ")),
        _ => {
            eprintln!("usage: {} <shape>\nshapes: {}", args[0], SHAPES.join(" "));
            std::process::exit(2);
        }
    }
}
