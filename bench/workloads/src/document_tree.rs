//! JSON-style documents built and dropped: trees of objects (sorted maps with string keys, as
//! `serde_json::Value` keeps them), arrays, strings and numbers, from two nodes to 25 thousand
//! (4.6 million in all), each walked once and then dropped whole. Many small blocks of mixed
//! sizes are allocated in bursts and freed in bursts, so the heap grows and shrinks all the
//! time. It stands for services that decode a request or a config into a tree, use it and drop
//! it.

use crate::{Outcome, Run, Scale, Timing, Workload, mix};
use seeded_rng::Rng;
use std::collections::BTreeMap;

pub const WORKLOAD: Workload = Workload {
    name: "document-tree",
    summary: "JSON-like trees (maps, arrays, strings, numbers) of 2 to 25k nodes, built, walked, dropped",
    prepare,
    timing: Timing::Run,
    quiet: None,
};

const WORDS: [&str; 8] = [
    "id", "name", "value", "items", "owner", "tags", "created", "status",
];

/// A document node, shaped like `serde_json::Value`.
enum Node {
    Null,
    Flag(bool),
    Number(i64),
    Text(String),
    List(Vec<Node>),
    Map(BTreeMap<String, Node>),
}

fn prepare(scale: Scale) -> Run {
    let documents = scale.of(6_000);
    let expected = (0..documents).fold(0, |sum, d| mix(sum, Plan::new(d).total(0)));
    Box::new(move || {
        let checksum = (0..documents).fold(0, |sum, d| {
            let document = Plan::new(d).build(0);
            let walked = walk(&document);
            drop(document);
            mix(sum, walked)
        });
        Outcome { checksum, expected }
    })
}

/// One document's shape, drawn from a generator seeded by its number. [`Plan::build`] makes
/// the tree and [`Plan::total`] what walking it must give; both draw the same numbers in the
/// same order, so they describe the same document.
struct Plan {
    rng: Rng,
    /// Children per container, at most: most documents are small, one in ten is wide.
    width: usize,
}

impl Plan {
    fn new(document: usize) -> Self {
        let mut rng = Rng::new(500 + document as u64);
        let width = match rng.below(10) {
            0 => 40,
            1..=3 => 12,
            _ => 4,
        };
        Plan { rng, width }
    }

    /// What kind of node comes next at `depth`: the root is a map, containers below it one
    /// node in three, and none at the bottom.
    fn kind(&mut self, depth: usize) -> usize {
        match depth {
            0 => 5,
            1..=3 => self.rng.below(6),
            _ => self.rng.below(4),
        }
    }

    fn build(&mut self, depth: usize) -> Node {
        match self.kind(depth) {
            0 => Node::Null,
            1 => Node::Flag(self.rng.percent(50)),
            2 => Node::Number(self.rng.next_u64() as i64 >> 20),
            3 => Node::Text(self.text()),
            4 => {
                let n = self.rng.below(self.width + 1);
                Node::List((0..n).map(|_| self.build(depth + 1)).collect())
            }
            _ => {
                let n = self.rng.between(1, self.width);
                Node::Map(
                    (0..n)
                        .map(|i| (self.key(i), self.build(depth + 1)))
                        .collect(),
                )
            }
        }
    }

    fn total(&mut self, depth: usize) -> u64 {
        match self.kind(depth) {
            0 => 1,
            1 => 2 + u64::from(self.rng.percent(50)),
            2 => (self.rng.next_u64() as i64 >> 20) as u64,
            3 => text_value(&self.text()),
            4 => {
                let n = self.rng.below(self.width + 1);
                (0..n).fold(n as u64, |sum, _| sum.wrapping_add(self.total(depth + 1)))
            }
            _ => {
                let n = self.rng.between(1, self.width);
                (0..n).fold(n as u64, |sum, i| {
                    let key = text_value(&self.key(i));
                    sum.wrapping_add(key).wrapping_add(self.total(depth + 1))
                })
            }
        }
    }

    /// A string of 1 to 3 words and a number, 4 to about 40 bytes.
    fn text(&mut self) -> String {
        let mut text = String::new();
        for _ in 0..self.rng.between(1, 3) {
            text.push_str(WORDS[self.rng.below(WORDS.len())]);
            text.push(' ');
        }
        text.push_str(&self.rng.below(100_000).to_string());
        text
    }

    /// A key unique within its map (its index), with a word in front as real keys have.
    fn key(&mut self, index: usize) -> String {
        format!("{}_{index}", WORDS[self.rng.below(WORDS.len())])
    }
}

fn text_value(text: &str) -> u64 {
    text.len() as u64 * 31 + u64::from(text.as_bytes()[0])
}

/// What walking a tree gives: the same sums as [`Plan::total`], from the tree's memory. The
/// order of a map's entries does not matter: sums commute.
fn walk(node: &Node) -> u64 {
    match node {
        Node::Null => 1,
        Node::Flag(flag) => 2 + u64::from(*flag),
        Node::Number(n) => *n as u64,
        Node::Text(text) => text_value(text),
        Node::List(items) => items
            .iter()
            .fold(items.len() as u64, |sum, item| sum.wrapping_add(walk(item))),
        Node::Map(entries) => entries.iter().fold(entries.len() as u64, |sum, (k, v)| {
            sum.wrapping_add(text_value(k)).wrapping_add(walk(v))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::{Node, Plan, walk};

    fn nodes(node: &Node) -> usize {
        match node {
            Node::List(items) => 1 + items.iter().map(nodes).sum::<usize>(),
            Node::Map(entries) => 1 + entries.values().map(nodes).sum::<usize>(),
            _ => 1,
        }
    }

    /// The tree holds what the plan says, document by document, and documents differ.
    #[test]
    fn walking_a_built_document_gives_its_planned_total() {
        let mut totals = Vec::new();
        for d in 0..200 {
            let tree = Plan::new(d).build(0);
            assert_eq!(walk(&tree), Plan::new(d).total(0), "document {d}");
            totals.push(walk(&tree));
        }
        totals.sort_unstable();
        totals.dedup();
        assert!(totals.len() > 190, "the documents are not all alike");
    }

    /// Most documents are small and a few are large, as the summary says.
    #[test]
    fn most_documents_are_small_and_a_few_are_large() {
        let mut sizes: Vec<usize> = (0..6000).map(|d| nodes(&Plan::new(d).build(0))).collect();
        sizes.sort_unstable();
        assert!(sizes[3000] < 50, "median {}", sizes[3000]);
        assert!(
            (10_000..=30_000).contains(&sizes[5999]),
            "largest {}",
            sizes[5999]
        );
    }
}
