//! A small service that serves its heap profile the way Go services do, so that `go tool pprof`,
//! continuous profilers and a browser can read it from the running process:
//!
//! - `GET /debug/pprof/heap`: a snapshot in pprof's protobuf format, symbolized in the process
//!   (`ProfilerOptions::symbolize`), so a reader needs neither the binary nor its debug info:
//!   `go tool pprof -top http://127.0.0.1:PORT/debug/pprof/heap`;
//! - `GET /debug/pprof/heap.svg`: a flame graph of the in-use bytes, from a snapshot, drawn in
//!   the process by `mimalloc-prof` (no Go needed).
//!
//! `cargo run --release -p profile-server -- [ADDRESS]` (default `127.0.0.1:6060`; port 0 picks
//! a free one) prints the profile's URL and serves until it is stopped. Its state, which the
//! profile shows, is what the worked example keeps: 48 MiB from `keeps_48_mib` and 8 MiB from
//! `keeps_8_mib`.

use mimalloc::profile::Profiler;
use std::error::Error;
use std::hint::black_box;
use tiny_http::{Header, Request, Response, Server};

mimalloc::assign_global!();

const BLOCK: usize = 64 << 10;

// Each block is allocated in the function's own loop, not in a call it ends with: a tail call
// would leave the function out of every sampled stack.
#[inline(never)]
fn keeps_48_mib() -> Vec<Vec<u8>> {
    let mut kept = Vec::with_capacity((48 << 20) / BLOCK);
    for i in 0..kept.capacity() {
        kept.push(vec![i as u8; BLOCK]);
    }
    kept
}

#[inline(never)]
fn keeps_8_mib() -> Vec<Vec<u8>> {
    let mut kept = Vec::with_capacity((8 << 20) / BLOCK);
    for i in 0..kept.capacity() {
        kept.push(vec![i as u8; BLOCK]);
    }
    kept
}

fn main() -> Result<(), Box<dyn Error>> {
    let address = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:6060".to_owned());
    // `snapshot_bytes` writes each snapshot to a file of this directory and removes it.
    let dir = std::env::temp_dir().join(format!("profile-server-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let profiler = Profiler::options()
        .symbolize(true)
        .start(dir.join("heap"))?;
    let state = black_box((keeps_48_mib(), keeps_8_mib()));
    let server = Server::http(&address).map_err(|e| format!("{address}: {e}"))?;
    println!("http://{}/debug/pprof/heap", server.server_addr());
    for request in server.incoming_requests() {
        let served = serve(&profiler, request);
        if let Err(e) = served {
            eprintln!("profile-server: {e}");
        }
    }
    drop(state);
    Ok(())
}

/// Answers one request; a snapshot that fails is a 500 with the reason.
fn serve(profiler: &Profiler, request: Request) -> Result<(), Box<dyn Error>> {
    let path = request
        .url()
        .split('?')
        .next()
        .unwrap_or_default()
        .to_owned();
    let (body, content_type) = match path.as_str() {
        "/debug/pprof/heap" => (
            profiler.snapshot_bytes().map_err(Into::into),
            "application/octet-stream",
        ),
        "/debug/pprof/heap.svg" => (flame_graph(profiler), "image/svg+xml"),
        _ => {
            return Ok(request.respond(Response::from_string("not found\n").with_status_code(404))?)
        }
    };
    let body = match body {
        Ok(body) => body,
        Err(e) => {
            let response = Response::from_string(format!("{e}\n")).with_status_code(500);
            return Ok(request.respond(response)?);
        }
    };
    let header = Header::from_bytes("Content-Type", content_type).expect("a valid header");
    request.respond(Response::from_data(body).with_header(header))?;
    Ok(())
}

/// A flame graph of the in-use bytes of a fresh snapshot.
fn flame_graph(profiler: &Profiler) -> Result<Vec<u8>, Box<dyn Error>> {
    let snapshot = profiler.snapshot_bytes()?;
    Ok(mimalloc_prof::flame_graph(&snapshot, "in-use bytes")?)
}
