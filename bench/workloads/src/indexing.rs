//! Indexing: an inverted index `HashMap<String, Vec<u32>>` is built over generated documents and
//! dropped, as a search engine indexes a corpus: a short-lived `String` per token, a long-lived
//! key per distinct word, and posting lists that grow.

use crate::{Outcome, Run, Scale, Timing, Workload, mix};
use seeded_rng::Rng;
use std::collections::HashMap;

pub const WORKLOAD: Workload = Workload {
    name: "indexing",
    summary: "build an inverted index HashMap<String, Vec<u32>> over generated text, then drop it",
    prepare,
    timing: Timing::Run,
    quiet: None,
};

const VOCABULARY: usize = 40_000;

fn prepare(scale: Scale) -> Run {
    let documents = scale.of(5_000);
    let rounds = 3;
    let mut rng = Rng::new(2);
    let vocabulary: Vec<String> = (0..VOCABULARY).map(|i| word(i, &mut rng)).collect();

    // What the index must hold, kept per vocabulary entry rather than per string.
    let mut last_document: Vec<Option<u32>> = vec![None; VOCABULARY];
    let mut tokens = 0u64;
    let mut corpus = Vec::with_capacity(documents);
    for doc in 0..documents as u32 {
        let mut text = String::new();
        for _ in 0..rng.between(50, 400) {
            // Skewed towards the first words, as natural language is.
            let bound = rng.below(VOCABULARY) + 1;
            let w = rng.below(bound);
            let word = &vocabulary[w];
            if rng.percent(20) {
                text.push_str(&word[..1].to_uppercase());
                text.push_str(&word[1..]);
            } else {
                text.push_str(word);
            }
            text.push_str(if rng.percent(10) { ", " } else { " " });
            last_document[w] = Some(doc);
            tokens += 1;
        }
        corpus.push(text);
    }
    let distinct = last_document.iter().flatten().count() as u64;
    let last_sum: u64 = last_document.iter().flatten().map(|&d| u64::from(d)).sum();
    let per_round = summary(tokens, distinct, last_sum);
    let expected = (0..rounds).fold(0, |sum, _| mix(sum, per_round));
    Box::new(move || {
        let checksum = (0..rounds).fold(0, |sum, _| mix(sum, index_and_summarise(&corpus)));
        Outcome { checksum, expected }
    })
}

/// A unique word: a fixed-length base-26 prefix from `i`, then a random tail.
fn word(mut i: usize, rng: &mut Rng) -> String {
    let mut w = String::new();
    for _ in 0..4 {
        w.push(char::from(b'a' + (i % 26) as u8));
        i /= 26;
    }
    for _ in 0..rng.below(9) {
        w.push(char::from(b'a' + rng.below(26) as u8));
    }
    w
}

fn summary(postings: u64, distinct: u64, last_sum: u64) -> u64 {
    mix(mix(mix(0, postings), distinct), last_sum)
}

fn index_and_summarise(corpus: &[String]) -> u64 {
    let mut index: HashMap<String, Vec<u32>> = HashMap::new();
    for (doc, text) in corpus.iter().enumerate() {
        for token in text.split(|c: char| !c.is_ascii_alphabetic()) {
            if !token.is_empty() {
                index
                    .entry(token.to_ascii_lowercase())
                    .or_default()
                    .push(doc as u32);
            }
        }
    }
    // Iteration order is random (`RandomState`): only order-independent sums.
    let postings: usize = index.values().map(Vec::len).sum();
    let last_sum: u64 = index.values().map(|p| u64::from(p[p.len() - 1])).sum();
    summary(postings as u64, index.len() as u64, last_sum)
}
